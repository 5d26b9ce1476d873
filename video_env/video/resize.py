"""Output-size rules for frames: fit a box, exact size, or a Qwen-VL pixel budget."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from PIL import Image

from video_env.errors import ConfigError
from video_env.video.base import FrameArray, Size


@dataclass(frozen=True)
class Resize:
    """How to size output frames relative to the native size.

    Build one with :meth:`fit`, :meth:`exact` or :meth:`max_pixels`.

    Attributes:
        mode: ``"fit"`` (inside a box, aspect kept), ``"exact"`` (stretched), or
            ``"max_pixels"`` (Qwen-VL's rule: sides multiples of ``factor``, area within
            ``[min_pixels, max_pixels]``, aspect kept as closely as possible).
        width: Box or target width (``fit`` / ``exact``).
        height: Box or target height (``fit`` / ``exact``).
        budget: Maximum pixels (``max_pixels``).
        min_budget: Minimum pixels (``max_pixels``).
        factor: Side multiple (``max_pixels``); 28 for Qwen2-VL / Qwen2.5-VL.
    """

    mode: Literal["fit", "exact", "max_pixels"]
    width: int = 0
    height: int = 0
    budget: int = 0
    min_budget: int = 0
    factor: int = 28

    @classmethod
    def fit(cls, width: int, height: int) -> Resize:
        """Largest size inside ``width x height`` with the native aspect ratio."""
        _check_positive(width=width, height=height)
        return cls("fit", width=width, height=height)

    @classmethod
    def exact(cls, width: int, height: int) -> Resize:
        """Exactly ``width x height`` (aspect ratio not kept)."""
        _check_positive(width=width, height=height)
        return cls("exact", width=width, height=height)

    @classmethod
    def max_pixels(cls, budget: int, factor: int = 28, min_budget: int = 56 * 56) -> Resize:
        """Qwen-VL's ``smart_resize``: sides multiples of ``factor``, area <= ``budget``.

        As in Qwen's rule, a frame whose rounded sides fall below ``min_budget`` is scaled
        up with the sides rounded up, which can pass ``budget`` when it is near
        ``min_budget`` (37x85 under 3,136: 56x112).
        """
        _check_positive(budget=budget, factor=factor, min_budget=min_budget)
        if min_budget > budget:
            raise ConfigError(f"min_budget {min_budget} exceeds budget {budget}")
        return cls("max_pixels", budget=budget, min_budget=min_budget, factor=factor)

    def target(self, native: Size) -> Size:
        """The output size for frames of the given native size."""
        if self.mode == "exact":
            return Size(self.width, self.height)
        if self.mode == "fit":
            scale = min(self.width / native.width, self.height / native.height)
            return Size(max(1, round(native.width * scale)), max(1, round(native.height * scale)))
        return _smart_resize(native, self.factor, self.min_budget, self.budget)


def _check_positive(**values: int) -> None:
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ConfigError(f"{key} must be a positive integer, got {value!r}")


def _smart_resize(native: Size, factor: int, min_pixels: int, max_pixels: int) -> Size:
    """Qwen2-VL's resizing rule, re-derived: round sides to ``factor``, then rescale."""
    w, h = native.width, native.height
    w_bar = max(factor, round(w / factor) * factor)
    h_bar = max(factor, round(h / factor) * factor)
    if w_bar * h_bar > max_pixels:
        beta = math.sqrt(w * h / max_pixels)
        w_bar = max(factor, math.floor(w / beta / factor) * factor)
        h_bar = max(factor, math.floor(h / beta / factor) * factor)
    elif w_bar * h_bar < min_pixels:
        beta = math.sqrt(min_pixels / (w * h))
        w_bar = math.ceil(w * beta / factor) * factor
        h_bar = math.ceil(h * beta / factor) * factor
    return Size(w_bar, h_bar)


def as_resize(size: object) -> Resize | None:
    """Normalise a ``size`` argument: ``None``, ``(width, height)``, ``Size`` or ``Resize``.

    Raises:
        ConfigError: If the value is none of these.
    """
    if size is None or isinstance(size, Resize):
        return size
    if isinstance(size, tuple) and len(size) == 2:
        width, height = size
        return Resize.fit(int(width), int(height))
    raise ConfigError(f"size must be None, (width, height) or a Resize, got {size!r}")


def resize_frame(frame: FrameArray, target: Size) -> FrameArray:
    """Resize one ``uint8[H, W, 3]`` frame (bilinear); returns it when already at ``target``."""
    if frame.shape[:2] == (target.height, target.width):
        return frame
    image = Image.fromarray(frame).resize(target, Image.Resampling.BILINEAR)
    return np.asarray(image)


def resize_frames(frames: FrameArray, target: Size) -> FrameArray:
    """Resize a batch of frames (bilinear); returns the input when already at ``target``."""
    if frames.shape[1:3] == (target.height, target.width):
        return frames
    out = np.empty((len(frames), target.height, target.width, 3), dtype=np.uint8)
    for i, frame in enumerate(frames):
        out[i] = resize_frame(frame, target)
    return out
