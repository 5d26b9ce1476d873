"""FALCONEye's zoom-in rules, with the paper's numbers: level-1 clips and per-window sampling."""

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


#: Sampling rules of :class:`ZoomRules`: the released code's arithmetic, or its stated intent.
SAMPLING_RULES = ("released", "linear")


@dataclass(frozen=True)
class ZoomRules:
    """Settings of the Zoom env taken from FALCONEye; every number overridable.

    A window of length ``L`` seconds is sampled at a frame rate ``fps(L)`` and gets
    ``n = clip(round(L * fps), min_frames, max_frames)`` frames (Python's ``round``, as
    the released code). ``sampling`` picks the rate:

    - ``"released"`` (default): the released code's ``get_numframes_from_window`` in
      mode ``vqa``, which produced the paper's tables. With ``fps_33 = min + 0.3333
      (max - min)`` and ``fps_66 = min + 0.6666 (max - min)``: ``max_fps`` up to
      ``short_s``; ``max_fps - (L - short_s) fps_66 / (mid_s - short_s)`` up to
      ``mid_s``; ``fps_33 - (L - mid_s) min_fps / (long_s - mid_s)`` up to ``long_s``;
      ``min_fps`` beyond. It jumps at ``mid_s`` (20 s: 22 frames, 29 s: 16, 31 s: 30,
      60 s: 30) although its comments say "linear from 2 to 1 fps" then "1 to 0.5".
    - ``"linear"``: that stated intent, continuous: ``max_fps`` to ``fps_33`` between
      ``short_s`` and ``mid_s``, ``fps_33`` to ``min_fps`` between ``mid_s`` and ``long_s``.

    The resolution is a Qwen-VL pixel budget interpolated linearly in ``L`` between
    ``short_pixels`` (at ``short_s``) and ``long_pixels`` (at ``long_s``), aspect ratio
    kept, sides multiples of 28: a 60 s clip gets 30 frames at about 672x1204 and a 5 s
    clip 10 frames at about 824x1462 (the zoom-in).

    Attributes:
        clip_s: Length of the level-1 clips captioned at reset (the last one is shorter).
        short_s: Window length at and below which sampling is densest (5 s).
        mid_s: Where the two pieces of the rate meet (30 s).
        long_s: Window length at and above which sampling is sparsest (60 s).
        max_fps: Frame rate of short windows (Qwen2.5-VL's 2 fps).
        min_fps: Frame rate of long windows (0.5).
        min_frames: Fewest frames one evaluation sees (the released code's 1).
        max_frames: Most frames one evaluation sees (256).
        sampling: ``"released"`` or ``"linear"`` (see above).
        caption_min_frames: Fewest frames of a clip caption (the released code's 4).
        caption_max_frames: Most frames of a clip caption (32).
        caption_fps: Frame rate of clip captions (0.5: 30 frames per 60 s clip).
        short_pixels: Pixel budget per frame of short windows (824 x 1462).
        long_pixels: Pixel budget per frame of long windows (672 x 1204).
    """

    clip_s: float = 60.0
    short_s: float = 5.0
    mid_s: float = 30.0
    long_s: float = 60.0
    max_fps: float = 2.0
    min_fps: float = 0.5
    min_frames: int = 1
    max_frames: int = 256
    sampling: str = "released"
    caption_min_frames: int = 4
    caption_max_frames: int = 32
    caption_fps: float = 0.5
    short_pixels: int = 824 * 1462
    long_pixels: int = 672 * 1204

    def __post_init__(self) -> None:
        positive = {
            "clip_s": self.clip_s,
            "short_s": self.short_s,
            "max_fps": self.max_fps,
            "min_fps": self.min_fps,
            "min_frames": self.min_frames,
            "max_frames": self.max_frames,
            "caption_min_frames": self.caption_min_frames,
            "caption_max_frames": self.caption_max_frames,
            "caption_fps": self.caption_fps,
        }
        for name, value in positive.items():
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be finite and > 0, got {value!r}")
        if not (math.isfinite(self.long_s) and self.short_s < self.mid_s < self.long_s):
            raise ConfigError(
                f"need short_s < mid_s < long_s, got {self.short_s}, {self.mid_s}, {self.long_s}"
            )
        if self.min_fps > self.max_fps:
            raise ConfigError(f"min_fps ({self.min_fps}) exceeds max_fps ({self.max_fps})")
        if self.min_frames > self.max_frames or self.caption_min_frames > self.caption_max_frames:
            raise ConfigError("a frame minimum exceeds its maximum")
        if self.sampling not in SAMPLING_RULES:
            raise ConfigError(f"sampling must be one of {SAMPLING_RULES}, got {self.sampling!r}")
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
        """Sampling rate of a window of ``length`` seconds (see the class docstring)."""
        spread = self.max_fps - self.min_fps
        fps_33 = self.min_fps + spread * 0.3333
        fps_66 = self.min_fps + spread * 0.6666
        if length <= self.short_s:
            return self.max_fps
        if length >= self.long_s and (self.sampling == "linear" or length > self.long_s):
            return self.min_fps
        if length <= self.mid_s:
            into = (length - self.short_s) / (self.mid_s - self.short_s)
            drop = fps_66 if self.sampling == "released" else self.max_fps - fps_33
            return self.max_fps - into * drop
        into = (length - self.mid_s) / (self.long_s - self.mid_s)
        drop = self.min_fps if self.sampling == "released" else fps_33 - self.min_fps
        return fps_33 - into * drop

    def n_frames(self, length: float) -> int:
        """Frames of one evaluation of a window of ``length`` seconds."""
        n = round(length * self.fps(length))
        return min(max(n, self.min_frames), self.max_frames)

    def caption_frames(self, length: float) -> int:
        """Frames of a clip caption: the released code's mode ``captioning``.

        ``int(L * max_fps)`` when that is at most ``caption_min_frames``, else
        ``clip(int(caption_fps * L), caption_min_frames, caption_max_frames)`` (at least 1).
        """
        if length * self.max_fps <= self.caption_min_frames:
            return max(1, int(length * self.max_fps))
        n = int(self.caption_fps * length)
        return min(self.caption_max_frames, max(self.caption_min_frames, n))

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
