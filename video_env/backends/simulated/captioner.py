"""A SIMULATED captioner: scene descriptions, sometimes with a needle's fact.

For the frames it is given, the caption names what the needles on screen carry, then the
dominant scene. A light caption (``style="light"``, FALCONEye's) is cut to ``max_words``
(15, "15 words maximum"); a visible needle's fact is stated with the sensor's perception
chance times ``fact_rate``, otherwise its carrier is mentioned (without the fact) with
chance ``presence_rate``. A detailed caption (``style="detailed"``, VideoAgent's frame
captions) is cut to ``detailed_max_words`` and states a fact with the perception chance
times ``detailed_fact_rate`` (a detailed description misses less of what is seen), the
carrier otherwise with ``detailed_presence_rate``. Deterministic per call.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from video_env._seeding import stable_seed
from video_env.backends.base import FrameBatch
from video_env.backends.simulated.model import SeededRole, SensorSettings, world_of
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost
from video_env.video.sampling import qwen_visual_tokens


@dataclass(frozen=True)
class SimCaptionerSettings:
    """Settings of :class:`SimulatedCaptioner`.

    Attributes:
        sensor: The perception model (shared with the simulated VLM by default).
        fact_rate: Factor on the perception chance for stating a fact in a caption
            (captions are light: they miss details a targeted question would catch).
        presence_rate: Chance of mentioning a seen-but-unread needle's carrier.
        max_words: Caption length limit.
        detailed_fact_rate: ``fact_rate`` of detailed captions.
        detailed_presence_rate: ``presence_rate`` of detailed captions.
        detailed_max_words: Length limit of detailed captions (VideoAgent's released
            captions average about 74 words).
    """

    sensor: SensorSettings = field(default_factory=SensorSettings)
    fact_rate: float = 0.6
    presence_rate: float = 0.5
    max_words: int = 15
    detailed_fact_rate: float = 1.0
    detailed_presence_rate: float = 1.0
    detailed_max_words: int = 75

    def __post_init__(self) -> None:
        rates = (self.fact_rate, self.presence_rate, self.detailed_fact_rate)
        if not all(0 <= r <= 1 for r in (*rates, self.detailed_presence_rate)):
            raise ConfigError("fact and presence rates must lie in [0, 1]")
        if self.max_words < 1 or self.detailed_max_words < 1:
            raise ConfigError("max_words and detailed_max_words must be >= 1")


class SimulatedCaptioner(SeededRole):
    """A simulated captioner (see the module docstring). Labelled ``simulated``.

    Args:
        settings: Model settings.
        seed: Seed of the caption draws.
    """

    def __init__(self, settings: SimCaptionerSettings | None = None, seed: int = 0) -> None:
        super().__init__("captioner", seed)
        self.settings = settings or SimCaptionerSettings()

    def caption(self, frames: FrameBatch, max_tokens: int = 64, style: str = "light") -> str:
        """A caption of ``frames`` in ``style`` (at most its word limit and ``max_tokens``).

        Raises:
            ConfigError: For an unknown style.
        """
        cfg = self.settings
        if style not in ("light", "detailed"):
            raise ConfigError(f"caption style must be 'light' or 'detailed', got {style!r}")
        detailed = style == "detailed"
        fact_rate = cfg.detailed_fact_rate if detailed else cfg.fact_rate
        presence_rate = cfg.detailed_presence_rate if detailed else cfg.presence_rate
        max_words = cfg.detailed_max_words if detailed else cfg.max_words
        world = world_of(frames, self.name)
        stamp = np.round(np.asarray(frames.times), 3).tobytes().hex()
        rng = np.random.default_rng(
            stable_seed(self.seed, self.episode_seed, world.name, stamp, frames.size)
        )
        mentions = []
        seen = {n.id: n for t in frames.times for n in world.needles_at(float(t))}
        for needle in seen.values():
            p, _ = self.settings.sensor.perceive(needle, frames, world.size)
            u = rng.random()
            if u < p * fact_rate:
                mentions.append(needle.statement)
            elif rng.random() < presence_rate:
                mentions.append(needle.presence)
        scenes = Counter(world.scene_at(float(t)).description for t in frames.times)
        scene = scenes.most_common(1)[0][0] if scenes else ""
        words = "; ".join([*mentions, scene]).split()
        limit = min(max_words, max_tokens)
        text = " ".join(words[:limit])
        tokens = qwen_visual_tokens(frames.size, len(frames))
        self.usage = self.usage + Cost(
            caption_calls=1, frames=len(frames), visual_tokens=tokens, completion_tokens=limit
        )
        return text
