"""Frames as a model gets them: the size a Qwen-style VLM is fed, and chat content with frames.

Shared by the transformers and OpenAI-compatible VLM backends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from video_env.backends.base import FrameBatch, VisionMessage
from video_env.errors import ConfigError
from video_env.video.base import FrameArray, Size
from video_env.video.resize import Resize, resize_frames

__all__ = [
    "QWEN_FACTOR",
    "FedFrames",
    "check_pixel_budgets",
    "fed_frames",
    "fed_size",
    "frames_fps",
    "message_parts",
    "processor_budgets",
]

#: Qwen2/2.5-VL frame sides are multiples of patch (14) x spatial merge (2) pixels.
QWEN_FACTOR = 28
_NO_LIMIT = 1 << 40


def check_pixel_budgets(min_pixels: int | None, max_pixels: int | None) -> None:
    """Raise :class:`ConfigError` unless the budgets are positive and ordered."""
    for name, value in (("min_pixels", min_pixels), ("max_pixels", max_pixels)):
        if value is not None and (isinstance(value, bool) or value < QWEN_FACTOR**2):
            raise ConfigError(f"{name} must be at least {QWEN_FACTOR**2} pixels, got {value}")
    if min_pixels is not None and max_pixels is not None and min_pixels > max_pixels:
        raise ConfigError(f"min_pixels {min_pixels} exceeds max_pixels {max_pixels}")


def processor_budgets(
    processor: object, min_pixels: int | None, max_pixels: int | None
) -> tuple[int | None, int | None]:
    """The pixel budgets to feed: those given, else the processor's own (Qwen's ``size``).

    Qwen-VL processors resize every frame into ``[shortest_edge, longest_edge]`` pixels;
    the backends decide sizes themselves (and tell the processor not to resize), so a
    budget left unset takes the checkpoint's value, as the model's own pipeline would.

    Raises:
        ConfigError: If the resulting budgets are out of order.
    """
    size = getattr(getattr(processor, "image_processor", None), "size", None)

    def read(key: str) -> int | None:
        value = size.get(key) if isinstance(size, dict) else getattr(size, key, None)
        return int(value) if isinstance(value, int) and value >= QWEN_FACTOR**2 else None

    low = min_pixels if min_pixels is not None else read("shortest_edge")
    high = max_pixels if max_pixels is not None else read("longest_edge")
    check_pixel_budgets(low, high)
    return low, high


def fed_size(size: Size, min_pixels: int | None = None, max_pixels: int | None = None) -> Size:
    """The frame size a Qwen-VL model is fed for frames of ``size``.

    Qwen's ``smart_resize``: sides rounded to multiples of 28, then scaled (aspect kept)
    into ``[min_pixels, max_pixels]`` when a budget is set. A size the env already chose
    on Qwen's grid and inside the budgets is kept exactly.
    """
    budget = Resize.max_pixels(
        max_pixels or _NO_LIMIT, factor=QWEN_FACTOR, min_budget=min_pixels or QWEN_FACTOR**2
    )
    return budget.target(size)


@dataclass(frozen=True)
class FedFrames:
    """What the model receives for one frame batch.

    Attributes:
        pixels: ``uint8[N, H, W, 3]`` at ``size``.
        times: The batch's timestamps (seconds).
        size: The fed size (``Size(width, height)``).
        fps: Sampling rate of the timestamps (for the model's temporal positions).
    """

    pixels: FrameArray
    times: tuple[float, ...]
    size: Size
    fps: float


def frames_fps(times: Sequence[float]) -> float:
    """Frames per second of uniformly spaced ``times`` (1.0 for a single frame or no span)."""
    if len(times) < 2 or times[-1] <= times[0]:
        return 1.0
    return (len(times) - 1) / (times[-1] - times[0])


def fed_frames(batch: FrameBatch, min_pixels: int | None, max_pixels: int | None) -> FedFrames:
    """The batch's frames at its timestamps, resized (bilinear) only if Qwen's grid needs it."""
    size = fed_size(batch.size, min_pixels, max_pixels)
    pixels = resize_frames(batch.pixels(), size)
    times = tuple(float(t) for t in np.asarray(batch.times, dtype=np.float64))
    return FedFrames(pixels, times, size, frames_fps(times))


def message_parts(message: VisionMessage) -> list[str | FrameBatch]:
    """The content of a chat message as a list of text and frame-batch parts.

    Raises:
        ConfigError: If the content is neither text nor a sequence of text and frames.
    """
    content = message.get("content", "")
    if isinstance(content, str):
        return [content]
    parts: list[str | FrameBatch] = []
    for part in content:
        if not isinstance(part, (str, FrameBatch)):
            raise ConfigError(
                f"message content parts are str or FrameBatch, got {type(part).__name__}"
            )
        parts.append(part)
    return parts
