"""Cheap checks on a video file before a decoder touches it: the file, and its frame size.

A decoder allocates every frame at the size the file declares, so a small file can ask for
gigabytes (a 60 KB H.264 mp4 of 16000x16000 frames needs 384 MB per decoded frame). The
frame size is therefore read from the stream header, with no decoder allowed to open, and
a file whose frames exceed :data:`DEFAULT_MAX_FRAME_PIXELS` (or
``$VIDEO_ENV_MAX_FRAME_PIXELS``) is refused before anything is decoded.
"""

from __future__ import annotations

import os
from typing import Any

from video_env import env_vars
from video_env._optional import require
from video_env.errors import ConfigError, VideoDecodeError
from video_env.video.base import Size

#: Largest frame area a reader opens, in pixels: DCI 8K (8192x4320), which also admits
#: 8K UHD (7680x4320) and both portrait forms. One such frame holds 53 MB as YUV 4:2:0 and
#: 106 MB as RGB.
DEFAULT_MAX_FRAME_PIXELS = 8192 * 4320

#: Environment variable that overrides the cap: a pixel count (``50000000``) or a size
#: (``16384x16384``).
MAX_FRAME_PIXELS_ENV_VAR = env_vars.MAX_FRAME_PIXELS.name

#: The codec whitelist of the header probe: no decoder bears this name, so FFmpeg's stream
#: probe cannot open one and decode frames to complete the stream's parameters.
_NO_DECODER = "none"

#: The largest block size a codec rounds a coded frame's sides up to (AV1's superblocks).
_BLOCK = 128


def check_file(path: str) -> None:
    """Raise :class:`VideoDecodeError` if ``path`` is missing, not a file, or empty."""
    if not os.path.exists(path):
        raise VideoDecodeError(path, "file not found")
    if not os.path.isfile(path):
        raise VideoDecodeError(path, "not a regular file")
    if os.path.getsize(path) == 0:
        raise VideoDecodeError(path, "file is empty")


def max_frame_pixels(override: int | None = None) -> int:
    """The frame-area cap: ``override``, else ``$VIDEO_ENV_MAX_FRAME_PIXELS``, else the default.

    Raises:
        ConfigError: If the override or the variable is not a positive pixel count or
            ``WIDTHxHEIGHT`` size.
    """
    if override is not None:
        if isinstance(override, bool) or not isinstance(override, int) or override <= 0:
            raise ConfigError(f"max_frame_pixels must be a positive integer, got {override!r}")
        return override
    text = (env_vars.MAX_FRAME_PIXELS.get() or "").strip()
    if not text:
        return DEFAULT_MAX_FRAME_PIXELS
    parts = text.lower().split("x")
    if len(parts) <= 2 and all(p.strip().isdigit() for p in parts):
        value = 1
        for part in parts:
            value *= int(part)
        if value > 0:
            return value
    raise ConfigError(
        f"${MAX_FRAME_PIXELS_ENV_VAR} must be a positive pixel count (50000000) or a size "
        f"(16384x16384), got {text!r}"
    )


def describe_cap(cap: int) -> str:
    """The cap in words, for messages: ``35,389,440 pixels (8192x4320)``."""
    return f"{cap:,} pixels" + (" (8192x4320)" if cap == DEFAULT_MAX_FRAME_PIXELS else "")


def check_frame_size(path: str, size: Size, cap: int, what: str = "the stream header") -> None:
    """Refuse a frame size that is unknown or over ``cap`` pixels.

    Args:
        path: The video file, for the message.
        size: The frame size found.
        cap: The largest frame area allowed, in pixels.
        what: Where the size was found, for the message.

    Raises:
        VideoDecodeError: Naming the size and the cap.
    """
    if size.width <= 0 or size.height <= 0:
        raise VideoDecodeError(path, f"{what} gives no frame size ({size.width}x{size.height})")
    if size.pixels > cap:
        raise VideoDecodeError(
            path,
            f"frames of {size.width}x{size.height} ({size.pixels:,} pixels, from {what}) exceed "
            f"the cap of {describe_cap(cap)}; raise it with ${MAX_FRAME_PIXELS_ENV_VAR} "
            "(a pixel count or WIDTHxHEIGHT) if the machine has the memory",
        )


def header_size(path: str) -> Size:
    """The frame size of the first video stream, from the header alone (nothing decoded).

    FFmpeg's stream probe (``avformat_find_stream_info``) normally decodes a few frames at
    their full size; here no decoder may open, so the size is the container's (or, for raw
    streams, the bitstream parser's).

    Raises:
        VideoDecodeError: If the file cannot be opened or holds no video stream.
    """
    return _stream_size(path)


def probe_frame_size(path: str, cap: int) -> Size:
    """Check the file, then its header's frame size against ``cap``; return that size.

    Raises:
        VideoDecodeError: If the file is missing, not a regular file, empty, has no video
            stream, or its frames are of unknown size or over the cap.
    """
    check_file(path)
    size = header_size(path)
    if size.width <= 0 or size.height <= 0:  # left to the decoder (MPEG-4 Part 2 in mp4, MPEG-PS)
        size = decoder_frame_size(path, cap, size)
        check_frame_size(path, size, cap, "the capped decoders' probe")
        return size
    check_frame_size(path, size, cap)
    return size


def decoder_frame_size(path: str, cap: int, header: Size) -> Size:
    """The frame size FFmpeg's stream probe finds when its decoders refuse frames over ``cap``.

    The probe decodes a few frames to complete the stream's parameters, so the size is the
    bitstream's rather than the container's; a frame over the cap is refused unallocated
    and the size then comes back over the cap or unknown.

    Args:
        path: The video file.
        cap: The frame-area cap, in pixels.
        header: The frame size its header declares (see :func:`capped_stream_options`).

    Raises:
        VideoDecodeError: If the file cannot be opened or holds no video stream.
    """
    return _stream_size(path, (cap, header))


def open_capped(av: Any, path: str, cap: int, header: Size) -> Any:
    """``av.open(path)`` with its decoders capped (:func:`capped_stream_options`).

    A format that exposes no stream before FFmpeg's probe (MPEG-PS) takes no per-stream
    option: it is opened uncapped, and its probe decodes a few frames at their own size.
    """
    try:
        return av.open(path, stream_options=capped_stream_options(cap, header))
    except ValueError:  # PyAV: "this format does not expose its streams before ..."
        return av.open(path)


def _stream_size(path: str, capped: tuple[int, Size] | None = None) -> Size:
    """The first video stream's frame size, from the header alone or with capped decoders.

    ``capped``: the cap and the header's size, for :func:`open_capped`; ``None``: no decoder
    may open, the size is the header's.

    Raises:
        VideoDecodeError: If the file cannot be opened or holds no video stream.
    """
    av = require("av", "core", "reading a video's header")
    try:
        if capped is None:
            opened = av.open(path, options={"codec_whitelist": _NO_DECODER})
        else:
            opened = open_capped(av, path, *capped)
        with opened as container:
            if not container.streams.video:
                raise VideoDecodeError(path, "no video stream")
            stream: Any = container.streams.video[0]
            return Size(int(stream.codec_context.width), int(stream.codec_context.height))
    except av.error.FFmpegError as exc:
        raise VideoDecodeError(path, f"PyAV: {exc}") from exc


def capped_stream_options(cap: int, header: Size) -> list[dict[str, str]]:
    """PyAV ``stream_options`` that make FFmpeg's decoders refuse frames over about ``cap``.

    A container can declare a small size while the bitstream holds larger frames; with
    these options the decoder refuses to allocate them (FFmpeg's ``max_pixels``). FFmpeg
    counts the coded size, whose sides codecs round up to their block size (120x96 H.264 is
    coded as 128x96), so the limit allows up to 128 more pixels on each side of the
    header's size.

    Args:
        cap: The frame-area cap, in pixels.
        header: The frame size the header declares (within the cap).
    """
    return [{"max_pixels": str(cap + _BLOCK * (header.width + header.height) + _BLOCK**2)}]
