"""FALCONEye's zoom-in rules (DESIGN §4): level-1 clips and per-window sampling."""

from __future__ import annotations

import math
from dataclasses import dataclass

from video_env.errors import ConfigError
from video_env.types import Interval
from video_env.video.base import Size
from video_env.video.resize import Resize

#: VLM evaluations per question of FALCONEye Pro (the default budget).
BUDGET_PRO = 45
#: VLM evaluations per question of FALCONEye Flash.
BUDGET_FLASH = 10
#: Smallest pixel budget :meth:`Resize.max_pixels` accepts by default.
_MIN_PIXELS = 56 * 56


@dataclass(frozen=True)
class ZoomRules:
    """Settings of the Zoom env taken from FALCONEye; every number overridable.

    A window of length ``L`` seconds is sampled at a frame rate that falls linearly from
    ``short_fps`` at ``L <= short_s`` to ``long_fps`` at ``L >= long_s``, giving
    ``n = clip(round(L * fps), 1, max_frames)`` frames (rounded half up). Its resolution
    is a Qwen-VL pixel budget interpolated linearly in ``L`` between ``short_pixels`` and
    ``long_pixels`` (aspect ratio kept, sides multiples of 28). So a 60 s clip gets 30
    frames at about 672x1204 and a 5 s clip 10 frames at about 824x1462: the zoom-in.

    Attributes:
        clip_s: Length of the level-1 clips captioned at reset (the last one is shorter).
        short_s: Window length at and below which sampling is densest.
        long_s: Window length at and above which sampling is sparsest.
        short_fps: Frame rate of short windows.
        long_fps: Frame rate of long windows.
        max_frames: Most frames one evaluation sees.
        short_pixels: Pixel budget per frame of short windows (824 x 1462).
        long_pixels: Pixel budget per frame of long windows (672 x 1204).
    """

    clip_s: float = 60.0
    short_s: float = 5.0
    long_s: float = 60.0
    short_fps: float = 2.0
    long_fps: float = 0.5
    max_frames: int = 256
    short_pixels: int = 824 * 1462
    long_pixels: int = 672 * 1204

    def __post_init__(self) -> None:
        positive = {
            "clip_s": self.clip_s,
            "short_s": self.short_s,
            "short_fps": self.short_fps,
            "long_fps": self.long_fps,
            "max_frames": self.max_frames,
        }
        for name, value in positive.items():
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be finite and > 0, got {value!r}")
        if not (math.isfinite(self.long_s) and self.long_s > self.short_s):
            raise ConfigError(f"long_s ({self.long_s}) must exceed short_s ({self.short_s})")
        for name, pixels in (
            ("short_pixels", self.short_pixels),
            ("long_pixels", self.long_pixels),
        ):
            if pixels < _MIN_PIXELS:
                raise ConfigError(f"{name} must be >= {_MIN_PIXELS}, got {pixels}")

    def _mix(self, length: float) -> float:
        """Where ``length`` lies between ``short_s`` (0) and ``long_s`` (1), clipped."""
        t = (length - self.short_s) / (self.long_s - self.short_s)
        return min(max(t, 0.0), 1.0)

    def fps(self, length: float) -> float:
        """Sampling rate of a window of ``length`` seconds."""
        return self.short_fps + self._mix(length) * (self.long_fps - self.short_fps)

    def n_frames(self, length: float) -> int:
        """Frames of one evaluation of a window of ``length`` seconds."""
        n = math.floor(length * self.fps(length) + 0.5)
        return min(max(n, 1), self.max_frames)

    def pixel_budget(self, length: float) -> int:
        """Pixels per frame allowed for a window of ``length`` seconds."""
        t = self._mix(length)
        return round(self.short_pixels + t * (self.long_pixels - self.short_pixels))

    def resize(self, length: float) -> Resize:
        """The resize rule (a Qwen-VL pixel budget) of a window of ``length`` seconds."""
        return Resize.max_pixels(self.pixel_budget(length))

    def frame_size(self, native: Size, length: float) -> Size:
        """Frame size of a window of ``length`` seconds of a video of ``native`` size."""
        return self.resize(length).target(native)

    def clips(self, duration: float) -> list[Interval]:
        """The level-1 clips ``[0, clip_s), [clip_s, 2 clip_s), ...`` of a video."""
        if not (math.isfinite(duration) and duration > 0):
            raise ConfigError(f"the video duration must be finite and > 0, got {duration!r}")
        count = max(1, math.ceil(duration / self.clip_s - 1e-9))
        return [
            Interval(i * self.clip_s, min(duration, (i + 1) * self.clip_s)) for i in range(count)
        ]
