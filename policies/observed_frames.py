"""The frames of a pixel observation as a :class:`FrameBatch` (what VLM policies look at).

A VLM policy sees only the observation: the env's ``frames`` (``uint8[20, R, R, 3]``, the
first ``n_frames`` valid, the turn's resolution in the top-left corner) and ``timestamps``.
:class:`ObservedFrames` is a video reader over exactly those frames, so backends that take a
:class:`FrameBatch` read the pixels the env showed, not the video file.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from video_env.backends.base import FrameBatch
from video_env.video.base import FrameArray, Size, Times
from video_env.video.resize import as_resize, resize_frames


class ObservedFrames:
    """A :class:`~video_env.video.base.VideoReader` over an observation's frames.

    ``frames(times)`` returns the shown frame nearest to each time; ``duration`` is the last
    shown time (the reader knows nothing beyond the observation).

    Args:
        pixels: ``uint8[N, H, W, 3]`` frames.
        times: Their timestamps in seconds (sorted).
    """

    def __init__(self, pixels: FrameArray, times: npt.NDArray[np.float64]) -> None:
        self._pixels = pixels
        self._times = times

    @property
    def name(self) -> str:
        """``"observation"``."""
        return "observation"

    @property
    def duration(self) -> float:
        """The last shown timestamp."""
        return float(self._times[-1]) if len(self._times) else 0.0

    @property
    def fps(self) -> float:
        """Shown frames per second of the window (0 for a single frame)."""
        span = self.duration - float(self._times[0]) if len(self._times) else 0.0
        return (len(self._times) - 1) / span if span > 0 else 0.0

    @property
    def num_frames(self) -> int:
        """Frames shown."""
        return len(self._times)

    @property
    def size(self) -> Size:
        """Size of the shown frames."""
        return Size(int(self._pixels.shape[2]), int(self._pixels.shape[1]))

    def frames(self, times: Times, size: object = None) -> FrameArray:
        """The shown frames nearest to ``times``, resized to ``size``."""
        wanted = np.asarray(times, dtype=np.float64).reshape(-1)
        index = np.abs(self._times[None, :] - wanted[:, None]).argmin(axis=1)
        out = self._pixels[index]
        resize = as_resize(size)
        return out if resize is None else resize_frames(out, resize.target(self.size))

    def close(self) -> None:
        """Nothing to release."""

    def __enter__(self) -> ObservedFrames:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def observed_batch(observation: dict[str, Any], size: Size) -> FrameBatch:
    """The turn's frames from a Pacing pixel observation.

    Args:
        observation: A Pacing observation with ``frames``.
        size: The turn's frame size (the env's rules for the speed shown).
    """
    w, h = size
    n = int(observation["n_frames"])
    times = np.asarray(observation["timestamps"][:n], dtype=np.float64)
    pixels = np.ascontiguousarray(np.asarray(observation["frames"])[:n, :h, :w])
    reader = ObservedFrames(pixels, times)
    return FrameBatch(reader, times, reader.size, [pixels])
