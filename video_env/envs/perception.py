"""The perception backends an environment holds, and the video they perceive."""

from __future__ import annotations

from dataclasses import dataclass

from video_env.backends.base import CLIP, VLM, Captioner
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost
from video_env.synth.standin import standin_video
from video_env.synth.world import SynthVideo
from video_env.types import VideoQA
from video_env.video.base import VideoReader
from video_env.video.open import open_video


@dataclass
class Perception:
    """A bundle of perception backends (any may be ``None`` if the env does not need it).

    Attributes:
        vlm: Answers questions on frames (with confidence).
        captioner: Light captions.
        clip: Frame retrieval features.
    """

    vlm: VLM | None = None
    captioner: Captioner | None = None
    clip: CLIP | None = None

    @classmethod
    def offline(cls, seed: int = 0) -> Perception:
        """The offline default: SIMULATED VLM, captioner and CLIP (see docs/simulator.md)."""
        from video_env.backends.simulated import SimulatedCaptioner, SimulatedCLIP, SimulatedVLM

        return cls(SimulatedVLM(seed=seed), SimulatedCaptioner(seed=seed), SimulatedCLIP(seed=seed))

    @property
    def backends(self) -> list[VLM | Captioner | CLIP]:
        """The configured backends, each once (one model often serves several roles)."""
        unique: list[VLM | Captioner | CLIP] = []
        for backend in (self.vlm, self.captioner, self.clip):
            if backend is not None and all(backend is not b for b in unique):
                unique.append(backend)
        return unique

    @property
    def simulated(self) -> bool:
        """Whether any configured backend is simulated (results must say so)."""
        return any(getattr(b, "simulated", False) for b in self.backends)

    def usage(self) -> Cost:
        """Total usage of all backends so far."""
        return sum((b.usage for b in self.backends), Cost())

    def require(self, *roles: str) -> None:
        """Raise :class:`ConfigError` unless every role has a backend."""
        missing = [r for r in roles if getattr(self, r) is None]
        if missing:
            raise ConfigError(f"this environment needs perception backends: {', '.join(missing)}")

    def video_for(self, sample: VideoQA, standin_missing: bool = False) -> VideoReader:
        """The video the backends perceive for ``sample``.

        Simulated backends need a :class:`SynthVideo`: the sample's own, or a stand-in
        built from its ground truth. Real backends get the decoded file; a missing file is
        replaced by a stand-in only when ``standin_missing`` is set (and the perception is
        then simulated in effect, which the caller must label).
        """
        if isinstance(sample.video, SynthVideo):
            return sample.video
        if self.simulated:
            return standin_video(sample)
        path = sample.video_path
        if standin_missing and path is not None:
            import os

            if not os.path.exists(path):
                return standin_video(sample)
        return open_video(sample.video)
