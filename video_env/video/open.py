"""Choosing a decoder and opening a video."""

from __future__ import annotations

import os

from video_env import env_vars
from video_env._optional import is_available
from video_env.errors import ConfigError, UnknownNameError
from video_env.video.base import VideoReader
from video_env.video.cache import DEFAULT_CACHE_BYTES

#: Supported decoders in order of preference: TorchCodec where it imports (exact, and
#: faster than decord in ``python -m benchmarks.perf.decoders``), decord 0.6.0, PyAV.
DECODERS = ("torchcodec", "decord", "pyav")
_MODULES = {"decord": "decord", "pyav": "av", "torchcodec": "torchcodec"}

#: Environment variable that overrides the default decoder.
DECODER_ENV_VAR = env_vars.DECODER.name


def available_decoders() -> list[str]:
    """The decoders whose packages are installed, in order of preference."""
    from video_env.video.torchcodec_reader import torchcodec_available

    return [
        name
        for name in DECODERS
        if (torchcodec_available() if name == "torchcodec" else is_available(_MODULES[name]))
    ]


def default_decoder() -> str:
    """``$VIDEO_ENV_DECODER`` if set, else the first installed decoder.

    Raises:
        ConfigError: If no decoder is installed.
    """
    chosen = env_vars.DECODER.get()
    if chosen:
        return chosen
    available = available_decoders()
    if not available:
        raise ConfigError("no video decoder installed: pip install decord==0.6.0 or av")
    return available[0]


def open_video(
    source: str | os.PathLike[str] | VideoReader,
    decoder: str | None = None,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
    max_frame_pixels: int | None = None,
) -> VideoReader:
    """Open a video for exact frame reading.

    The frame size is read from the stream header before anything is decoded, and a file
    whose frames exceed the frame-area cap is refused; reads then decode a few frames at a
    time and resize each at once, so a read's memory follows its output size.

    Args:
        source: A file path, or an object already implementing :class:`VideoReader`
            (such as a synthetic video), which is returned as is.
        decoder: ``"decord"``, ``"pyav"`` or ``"torchcodec"``; default:
            :func:`default_decoder`.
        cache_bytes: Byte budget of the reader's LRU frame cache (``0`` disables it).
        max_frame_pixels: The largest frame area opened, in pixels (default:
            ``$VIDEO_ENV_MAX_FRAME_PIXELS``, else
            :data:`~video_env.video.probe.DEFAULT_MAX_FRAME_PIXELS`, 8192x4320).

    Returns:
        A reader; use it as a context manager or call ``close()``.

    Raises:
        VideoDecodeError: If the file is missing, empty or corrupt, or its frames exceed
            the cap (the message names their size and the cap).
        UnknownNameError: If the decoder name is unknown.
        ConfigError: If the cap (argument or variable) is not a positive pixel count.
    """
    if isinstance(source, VideoReader):
        return source
    name = decoder or default_decoder()
    path = os.fspath(source)
    if name == "decord":
        from video_env.video.decord_reader import DecordReader

        return DecordReader(path, cache_bytes=cache_bytes, max_frame_pixels=max_frame_pixels)
    if name == "pyav":
        from video_env.video.pyav_reader import PyAVReader

        return PyAVReader(path, cache_bytes=cache_bytes, max_frame_pixels=max_frame_pixels)
    if name == "torchcodec":
        from video_env.video.torchcodec_reader import TorchCodecReader

        return TorchCodecReader(path, cache_bytes=cache_bytes, max_frame_pixels=max_frame_pixels)
    raise UnknownNameError("decoder", name, DECODERS)
