"""The video reader protocol shared by decoded files and synthetic videos."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol, TypeAlias, runtime_checkable

import numpy as np
import numpy.typing as npt


class Size(NamedTuple):
    """A frame size in pixels, width first (as PIL and video tools write it)."""

    width: int
    height: int

    @property
    def pixels(self) -> int:
        """Number of pixels."""
        return self.width * self.height


#: Timestamps in seconds: a sequence of floats or a 1-D float array.
Times: TypeAlias = "Sequence[float] | npt.NDArray[np.floating]"

#: A batch of RGB frames, ``uint8[N, H, W, 3]``.
FrameArray: TypeAlias = "npt.NDArray[np.uint8]"


@runtime_checkable
class VideoReader(Protocol):
    """What every video source offers: metadata and exact frames at timestamps.

    Timestamps are seconds from the first frame. ``frames(times)`` returns, for each
    requested time, the frame whose presentation time is nearest (ties go to the
    earlier frame); times in ``[0, duration]`` are valid, and times past the last
    frame's start map to the last frame. ``size`` may be ``None`` (native size), a
    ``(width, height)`` box to fit inside keeping the aspect ratio, or a
    :class:`~video_env.video.resize.Resize` for an exact size or a pixel budget.
    """

    @property
    def name(self) -> str:
        """A human-readable identifier (file path or synthetic video id)."""
        ...

    @property
    def duration(self) -> float:
        """Length in seconds (end of the last frame)."""
        ...

    @property
    def fps(self) -> float:
        """Average frame rate."""
        ...

    @property
    def num_frames(self) -> int:
        """Number of frames."""
        ...

    @property
    def size(self) -> Size:
        """Native frame size."""
        ...

    def frames(self, times: Times, size: object = None) -> FrameArray:
        """Frames at the given timestamps as ``uint8[N, H, W, 3]``."""
        ...

    def close(self) -> None:
        """Release file handles (idempotent)."""
        ...

    def __enter__(self) -> VideoReader: ...

    def __exit__(self, *exc: object) -> None: ...


def as_times(times: Times, duration: float, name: str) -> npt.NDArray[np.float64]:
    """Validate timestamps against a duration and return them as a float array.

    Args:
        times: Requested timestamps in seconds.
        duration: Length of the video in seconds.
        name: The video's name, for the error message.

    Returns:
        A 1-D ``float64`` array.

    Raises:
        ValueError: If a timestamp is not finite or lies outside ``[0, duration]``.
    """
    arr = np.asarray(times, dtype=np.float64).reshape(-1)
    if arr.size == 0:
        return arr
    bad = ~np.isfinite(arr) | (arr < 0) | (arr > duration + 1e-6)
    if bad.any():
        first = float(arr[np.argmax(bad)])
        raise ValueError(
            f"timestamp {first!r} s is outside video {name!r} (valid range 0 to {duration:.3f} s); "
            f"{int(bad.sum())} of {arr.size} requested timestamps are out of range"
        )
    return arr
