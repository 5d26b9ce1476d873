"""The SIMULATED sensor model shared by the simulated VLM, captioner and CLIP.

Perception of a needle from a batch of frames (documented in ``docs/simulator.md``):

- **legibility** of one frame: a logistic function of the needle's effective pixel size
  (its native size times the frame's downscale) around a per-category threshold;
- **per-frame detection** ``q = q_max[category] * legibility``;
- **evidence**: with ``k`` of the ``n`` frames inside the needle's intervals, the chance
  of perceiving the fact is ``ceiling * (1 - (1 - q)^k) * (k / n)^dilution`` (saturating
  in ``k``; frames outside the evidence add nothing and dilute attention a little).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from video_env.backends.base import FrameBatch
from video_env.errors import BackendError, ConfigError
from video_env.metrics.cost import Cost
from video_env.synth.elements import Needle
from video_env.synth.vocab import Category
from video_env.synth.world import SynthVideo
from video_env.video.base import Size


@dataclass(frozen=True)
class SensorSettings:
    """Parameters of the simulated perception model; every one a named setting.

    Attributes:
        legible_px: Effective needle size (px) at which a single frame is 50 % legible.
        legibility_softness: Width of the legibility logistic, as a fraction of
            ``legible_px``.
        per_frame_detection: Chance that one fully legible evidence frame reveals the fact.
        ceiling: Highest chance of perceiving a fact, however much evidence.
        dilution: Exponent on the evidence-frame fraction ``k / n``.
    """

    legible_px: Mapping[str, float] = field(
        default_factory=lambda: {"text": 10.0, "visual": 3.0, "time": 14.0, "object": 8.0}
    )
    legibility_softness: float = 0.25
    per_frame_detection: Mapping[str, float] = field(
        default_factory=lambda: {"text": 0.35, "visual": 0.5, "time": 0.3, "object": 0.4}
    )
    ceiling: float = 0.97
    dilution: float = 0.25

    def __post_init__(self) -> None:
        if not 0 < self.ceiling <= 1 or self.dilution < 0 or self.legibility_softness <= 0:
            raise ConfigError("ceiling must be in (0, 1], dilution >= 0, softness > 0")
        for name in ("legible_px", "per_frame_detection"):
            table = getattr(self, name)
            missing = {"text", "visual", "time", "object"} - set(table)
            if missing:
                raise ConfigError(f"{name} lacks categories {sorted(missing)}")
            object.__setattr__(self, name, dict(table))  # a copy: callers keep theirs

    def legibility(self, needle: Needle, size: Size, native: Size) -> float:
        """Chance-like legibility of ``needle`` in one frame of ``size``."""
        scale = min(size.width / native.width, size.height / native.height)
        effective = needle.pixel_size * scale
        need = self.legible_px[needle.category]
        return 1.0 / (1.0 + math.exp(-(effective - need) / (self.legibility_softness * need)))

    def perceive(self, needle: Needle, frames: FrameBatch, native: Size) -> tuple[float, int]:
        """Chance of perceiving ``needle``'s fact from ``frames``, and the evidence count."""
        k = evidence_frames(needle, frames.times)
        n = len(frames.times)
        if k == 0 or n == 0:
            return 0.0, k
        q = self.per_frame_detection[needle.category] * self.legibility(needle, frames.size, native)
        p = self.ceiling * (1.0 - (1.0 - q) ** k) * (k / n) ** self.dilution
        return p, k


class SeededRole:
    """What the simulated VLM and captioner share: their seeds, name and usage.

    Args:
        role: The role named in ``name`` (``simulated-<role>(seed=<seed>)``).
        seed: Seed of the role's draws.
    """

    simulated = True

    def __init__(self, role: str, seed: int) -> None:
        self.seed = seed
        self.episode_seed = 0  # set by the env at each reset: replicas draw independently
        self.name = f"simulated-{role}(seed={seed})"
        self.usage = Cost()


def evidence_frames(needle: Needle, times: np.ndarray) -> int:
    """How many timestamps fall inside the needle's intervals."""
    inside = np.zeros(len(times), dtype=bool)
    for iv in needle.intervals:
        inside |= (times >= iv.start) & (times <= iv.end)
    return int(inside.sum())


def world_of(frames: FrameBatch, backend: str) -> SynthVideo:
    """The synthetic world behind ``frames``: the video itself, or a real file's ``world``.

    Raises:
        BackendError: If the frames come from a decoded file with no world: simulated
            perception needs a :class:`SynthVideo` or an
            :class:`~video_env.synth.annotated.AnnotatedVideo` (the envs build one).
    """
    if isinstance(frames.video, SynthVideo):
        return frames.video
    world = getattr(frames.video, "world", None)
    if isinstance(world, SynthVideo):
        return world
    raise BackendError(
        f"{backend} is simulated and needs a synthetic video, got {frames.video.name!r}; "
        "give it AnnotatedVideo(reader, standin_video(sample)) (video_env.synth)"
    )


def category_of(needle: Needle | None) -> Category | None:
    """The needle's category, if any."""
    return needle.category if needle is not None else None
