"""Frame-sampling helpers: timestamps in a window and per-frame visual-token costs."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from video_env.errors import ConfigError
from video_env.types import Interval
from video_env.video.base import Size
from video_env.video.resize import Resize


def uniform_times(window: Interval, n: int) -> npt.NDArray[np.float64]:
    """``n`` timestamps centred in ``n`` equal bins of ``window``.

    For ``[0, 10]`` and ``n = 5`` this gives ``1, 3, 5, 7, 9``: never the exact ends,
    so every sample lies strictly inside the window (for a non-empty window).

    Raises:
        ConfigError: If ``n`` is negative.
    """
    if n < 0:
        raise ConfigError(f"number of frames must be >= 0, got {n}")
    step = window.length / n if n else 0.0
    return window.start + step * (np.arange(n, dtype=np.float64) + 0.5)


def frame_size(native: Size, resolution: int | tuple[int, int] | Resize | None) -> Size:
    """The concrete frame size a resolution setting gives for a video.

    Args:
        native: The video's native size.
        resolution: ``None`` (native), an int ``r`` (fit inside ``r x r``), a
            ``(width, height)`` box to fit inside, or a :class:`Resize`.
    """
    if resolution is None:
        return native
    if isinstance(resolution, int):
        return Resize.fit(resolution, resolution).target(native)
    if isinstance(resolution, tuple):
        return Resize.fit(*resolution).target(native)
    return resolution.target(native)


def qwen_visual_tokens(size: Size, n_frames: int, patch: int = 14, merge: int = 2) -> int:
    """Visual tokens Qwen2/2.5-VL spends on ``n_frames`` video frames of ``size``.

    Frames are resized to multiples of ``patch * merge`` (28) pixels, grouped in pairs
    (temporal patch 2), and each ``28 x 28`` area of a pair becomes one token.
    """
    unit = patch * merge
    cols = max(1, round(size.width / unit))
    rows = max(1, round(size.height / unit))
    return cols * rows * math.ceil(n_frames / 2)
