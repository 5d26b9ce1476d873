"""Write numpy frame sequences to video files with PyAV (test videos, synthetic exports)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

import numpy as np

from video_env._optional import require
from video_env.errors import ConfigError


def write_video(
    path: str | os.PathLike[str],
    frames: Iterable[np.ndarray],
    fps: float,
    *,
    codec: str = "libx264",
    crf: int = 18,
    gop: int | None = None,
    pix_fmt: str = "yuv420p",
) -> int:
    """Encode RGB frames (``uint8[H, W, 3]`` each, or one ``[N, H, W, 3]`` array) to a file.

    Args:
        path: Output file; the container follows the extension (``.mp4``, ``.mkv``...).
        frames: The frames, all of one size with even width and height.
        fps: Frame rate (a float such as 29.97 is kept as the nearest ``n/1001`` rate).
        codec: FFmpeg encoder name.
        crf: Constant rate factor for x264/x265 (0 is lossless, 18 visually lossless).
        gop: Keyframe interval in frames (encoder default when ``None``).
        pix_fmt: Pixel format of the encoded stream.

    Returns:
        The number of frames written.

    Raises:
        ConfigError: On bad frame shapes or a non-positive frame rate.
    """
    av = require("av", "core", "writing videos")
    if not fps > 0:
        raise ConfigError(f"fps must be > 0, got {fps}")
    rate = Fraction(fps).limit_denominator(1001)
    count = 0
    with av.open(os.fspath(path), mode="w") as container:
        stream: Any = None
        for frame in frames:
            frame = np.ascontiguousarray(frame, dtype=np.uint8)
            if frame.ndim != 3 or frame.shape[2] != 3:
                raise ConfigError(f"frames must be uint8[H, W, 3], got shape {frame.shape}")
            if stream is None:
                stream = _add_stream(container, codec, rate, frame.shape, crf, gop, pix_fmt)
            elif frame.shape[:2] != (stream.height, stream.width):
                raise ConfigError(f"frame {count} has shape {frame.shape}, expected the first's")
            video_frame = av.VideoFrame.from_ndarray(frame, format="rgb24")
            container.mux(stream.encode(video_frame))
            count += 1
        if stream is not None:
            container.mux(stream.encode(None))
    return count


def _add_stream(
    container: Any,
    codec: str,
    rate: Fraction,
    shape: tuple[int, ...],
    crf: int,
    gop: int | None,
    pix_fmt: str,
) -> Any:
    height, width = shape[:2]
    if pix_fmt == "yuv420p" and (height % 2 or width % 2):
        raise ConfigError(f"yuv420p needs even frame sizes, got {width}x{height}")
    stream = container.add_stream(codec, rate=rate)
    stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
    options = {"crf": str(crf)} if codec in ("libx264", "libx265") else {}
    stream.options = options
    if gop is not None:
        stream.codec_context.gop_size = gop
    return stream
