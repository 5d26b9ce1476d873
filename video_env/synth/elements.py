"""What a synthetic video is made of: scenes, and needles that each carry one fact.

The world model (:mod:`video_env.synth.world`) lays them on a timeline; the renderer
(:mod:`video_env.synth.render`) draws them. Both read these; neither is read here.
"""

from __future__ import annotations

from dataclasses import dataclass

from video_env.errors import ConfigError
from video_env.synth.vocab import Category, SceneStyle
from video_env.types import Interval

__all__ = ["Needle", "Scene"]


@dataclass(frozen=True)
class Scene:
    """A stretch of video with one visual style."""

    interval: Interval
    style: SceneStyle

    @property
    def description(self) -> str:
        """One-line description, as a captioner would give it."""
        return self.style.description


@dataclass(frozen=True)
class Needle:
    """A short event that carries one fact.

    Attributes:
        id: Unique within its video.
        category: Question category.
        carrier: The object carrying the fact, e.g. ``"the street sign"``.
        fact: The answer, e.g. ``"MAPLE"``.
        distractors: Plausible wrong answers of the same kind.
        intervals: When the needle is on screen (usually one window; a stand-in for a
            benchmark sample has one per ground-truth interval).
        pixel_size: Size in native (720p) pixels of the detail needed to read the fact.
        position: Centre of the needle as fractions of the frame ``(x, y)``.
        question: The question this needle answers (unique in its video).
        presence: What a captioner says when it sees the carrier but not the fact.
        statement: How a caption states the fact.
        style: Drawing variant (e.g. analog or digital clock).
    """

    id: str
    category: Category
    carrier: str
    fact: str
    distractors: tuple[str, ...]
    intervals: tuple[Interval, ...]
    pixel_size: float
    position: tuple[float, float]
    question: str
    presence: str
    statement: str
    style: str = ""

    def __post_init__(self) -> None:
        if not self.intervals:
            raise ConfigError(f"needle {self.id}: it needs at least one interval")
        if not self.pixel_size > 0:
            raise ConfigError(f"needle {self.id}: pixel size must be > 0")
        if self.fact in self.distractors:
            raise ConfigError(f"needle {self.id}: its fact {self.fact!r} is also a distractor")

    @property
    def start(self) -> float:
        """When the needle first appears."""
        return min(iv.start for iv in self.intervals)

    @property
    def end(self) -> float:
        """When the needle last disappears."""
        return max(iv.end for iv in self.intervals)

    def visible(self, t: float) -> bool:
        """Whether the needle is on screen at ``t``."""
        return any(iv.contains(t) for iv in self.intervals)
