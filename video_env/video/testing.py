"""Frames that carry their own index, for checking that a decoder returns the right frame.

Each frame shows its index as a row of black/white blocks (one bit per block) over a
moving gradient, so frames survive lossy encoding and can be identified after decoding.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from video_env.errors import ConfigError
from video_env.video.base import FrameArray


def coded_frame(index: int, width: int = 120, height: int = 96, bits: int = 12) -> FrameArray:
    """One ``uint8[height, width, 3]`` frame that encodes ``index`` in its top half.

    Raises:
        ConfigError: If the index does not fit in ``bits`` bits or the frame is too narrow.
    """
    if not 0 <= index < 2**bits:
        raise ConfigError(f"index {index} does not fit in {bits} bits")
    block = width // bits
    if block < 4 or width % bits:
        raise ConfigError(f"width {width} must be a multiple of {bits} code blocks of >= 4 px")
    frame = np.empty((height, width, 3), dtype=np.uint8)
    ramp = (np.arange(width, dtype=np.int64) * 2 + index * 7) % 256
    frame[:] = ramp[None, :, None].astype(np.uint8)
    frame[..., 1] = (index * 13) % 256
    top = height // 2
    frame[:top] = 0
    for bit in range(bits):
        if (index >> bit) & 1:
            frame[:top, bit * block : (bit + 1) * block] = 255
    return frame


def coded_frames(
    n: int, width: int = 120, height: int = 96, bits: int = 12
) -> Iterator[FrameArray]:
    """Frames ``0 .. n-1`` made by :func:`coded_frame`."""
    for index in range(n):
        yield coded_frame(index, width, height, bits)


def read_code(frames: FrameArray, bits: int = 12) -> npt.NDArray[np.int64]:
    """Indices encoded in a batch of decoded frames (``uint8[N, H, W, 3]``).

    Frames may have been resized: blocks are located relative to the frame width.
    """
    n, height, width = frames.shape[:3]
    top = frames[:, : height // 2].mean(axis=3)
    edges = np.linspace(0, width, bits + 1)
    codes = np.zeros(n, dtype=np.int64)
    for bit in range(bits):
        lo, hi = int(edges[bit]), int(edges[bit + 1])
        margin = max(1, (hi - lo) // 4)
        block = top[:, 2 : -2 or None, lo + margin : hi - margin]
        codes |= (block.mean(axis=(1, 2)) > 127).astype(np.int64) << bit
    return codes
