"""A SIMULATED CLIP: frame features from the world's content descriptions plus noise.

A frame's feature is the normalised sum of the text embedding of its scene description,
the embeddings of the needles on screen (each weighted by its legibility at CLIP's input
size, mixing the fact statement and the bare carrier), and Gaussian noise of norm
``noise`` seeded by (seed, video, time). Text features are text embeddings. Features
are computed once per (video, timestamp) and cached — like a real CLIP, the simulated one
is deterministic and does not change with the episode seed; ``usage`` counts every distinct frame
requested by a call, cached or not, so costs never depend on earlier episodes, and the
visual tokens a ViT-B/32 CLIP would encode for them (:func:`clip_visual_tokens`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from video_env._seeding import stable_seed
from video_env.backends.base import FrameBatch, TextEmbedder, normalize_rows
from video_env.backends.simulated.model import SensorSettings, world_of
from video_env.backends.text import default_text_embedder
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost
from video_env.video.base import Size, VideoReader

#: Patch size of the CLIP modelled (ViT-B/32).
CLIP_PATCH = 32


def clip_visual_tokens(size: Size, n_frames: int, patch: int = CLIP_PATCH) -> int:
    """Tokens a ViT CLIP encodes for ``n_frames`` at ``size``: patches plus the class token."""
    return n_frames * ((size.width // patch) * (size.height // patch) + 1)


@dataclass(frozen=True)
class SimCLIPSettings:
    """Settings of :class:`SimulatedCLIP`.

    Attributes:
        sensor: Perception model (for needle legibility).
        input_size: CLIP's image size.
        needle_weight: Weight of a fully legible needle relative to the scene.
        noise: Norm of the Gaussian noise added to each (unit) image feature.
    """

    sensor: SensorSettings = field(default_factory=SensorSettings)
    input_size: Size = field(default_factory=lambda: Size(224, 224))
    needle_weight: float = 1.2
    noise: float = 0.5

    def __post_init__(self) -> None:
        if self.needle_weight < 0 or self.noise < 0:
            raise ConfigError("needle_weight and noise must be >= 0")


class SimulatedCLIP:
    """A simulated CLIP (see the module docstring). Labelled ``simulated``.

    Args:
        settings: Model settings.
        embedder: Text embedder (default: :func:`default_text_embedder`).
        seed: Seed of the feature noise.
    """

    simulated = True

    def __init__(
        self,
        settings: SimCLIPSettings | None = None,
        embedder: TextEmbedder | None = None,
        seed: int = 0,
    ) -> None:
        self.settings = settings or SimCLIPSettings()
        self._embedder = embedder
        self.seed = seed
        self.name = f"simulated-clip(seed={seed})"
        self.usage = Cost()
        self._cache: dict[tuple[str, float], npt.NDArray[np.float32]] = {}

    def image_features(self, video: VideoReader, times: Sequence[float]) -> npt.NDArray[np.float32]:
        """Features of the frames at ``times`` (cached per video and snapped time)."""
        batch = FrameBatch(video, np.asarray(times, dtype=np.float64), self.settings.input_size)
        world = world_of(batch, self.name)
        snapped = world.snap(batch.times)
        unique = [float(t) for t in dict.fromkeys(snapped.tolist())]
        for t in unique:
            if (world.name, t) not in self._cache:
                self._cache[(world.name, t)] = self._feature(world, t)
        # Usage counts every distinct frame asked for, cached or not, so that an episode's
        # record does not depend on which episodes ran before it (the cache saves time).
        tokens = clip_visual_tokens(self.settings.input_size, len(unique))
        self.usage = self.usage + Cost(clip_calls=1, frames=len(unique), visual_tokens=tokens)
        return (
            np.stack([self._cache[(world.name, float(t))] for t in snapped])
            if len(snapped)
            else np.zeros((0, 1), dtype=np.float32)
        )

    @property
    def embedder(self) -> TextEmbedder:
        """The text embedder (the default one is built on first use: loading is slow)."""
        if self._embedder is None:
            self._embedder = default_text_embedder()
        return self._embedder

    def text_features(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Features of ``texts``."""
        return self.embedder.embed(list(texts))

    def _feature(self, world: object, t: float) -> npt.NDArray[np.float32]:
        from video_env.synth.world import SynthVideo

        assert isinstance(world, SynthVideo)  # checked by world_of
        sensor, size = self.settings.sensor, self.settings.input_size
        texts = [world.scene_at(t).description]
        weights = [1.0]
        for needle in world.needles_at(t):
            legible = sensor.legibility(needle, size, world.size)
            texts += [needle.statement, needle.presence]
            weights += [
                self.settings.needle_weight * legible,
                self.settings.needle_weight * (1 - legible),
            ]
        vectors = self.embedder.embed(texts)
        feature = (np.asarray(weights)[:, None] * vectors).sum(axis=0)
        rng = np.random.default_rng(stable_seed(self.seed, world.name, round(t, 3), "clip"))
        noise = rng.normal(size=feature.shape)
        feature = feature / max(np.linalg.norm(feature), 1e-9)
        feature += self.settings.noise * noise / np.linalg.norm(noise)
        out: npt.NDArray[np.float32] = normalize_rows(feature[None, :])[0]
        return out
