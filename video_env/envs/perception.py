"""The perception backends an environment holds, and the video they perceive."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from video_env.backends.base import CLIP, VLM, Captioner
from video_env.errors import ConfigError, VideoDecodeError
from video_env.metrics.cost import Cost
from video_env.provenance import (
    PIXEL_REAL,
    PIXEL_VLM,
    RANDOM_WEIGHTS,
    SIMULATED,
    object_labels,
    perception_label,
    record_flags,
)
from video_env.synth.annotated import AnnotatedVideo, file_world
from video_env.synth.standin import standin_video
from video_env.synth.world import SynthVideo
from video_env.types import MAX_DURATION_S, SampleError, VideoQA
from video_env.video.base import VideoReader
from video_env.video.open import open_video

#: How far past a file's end annotated evidence may start (annotations round durations).
EVIDENCE_SLACK_S = 1.0


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

    @classmethod
    def pixel_real(cls, weights: str | None = None) -> Perception:
        """The pixel-real offline world: tiny models trained on the synthetic renderer.

        ClipQuery retrieves with the trained CLIP from rendered pixels; the VLM scores
        options over tiles of the env's frames; the captioner names what it detects.
        Results are labelled ``pixel-real`` (see docs/pixel_real.md).

        Args:
            weights: Folder of the pixel-real CLIP (default: the shipped weights).
        """
        spec = f"pixel-real:{weights}" if weights else "pixel-real"
        return cls.from_specs(spec, spec, spec)

    @classmethod
    def pixel_vlm(cls, folder: str | None = None) -> Perception:
        """The pixel VLM world: a tiny Qwen2.5-VL trained on the renderer answers and captions.

        The VLM and captioner are the pixel VLM through the transformers backend (the
        code path of Qwen2.5-VL-7B); ClipQuery retrieves with the pixel-real CLIP.
        Results are labelled ``pixel-vlm`` (see docs/pixel_vlm.md).

        Args:
            folder: The checkpoint folder (default: the shipped one).
        """
        spec = f"pixel-vlm:{folder}" if folder else "pixel-vlm"
        return cls.from_specs(spec, spec, "pixel-real")

    @classmethod
    def from_specs(
        cls,
        vlm: str | VLM | None = None,
        captioner: str | Captioner | None = None,
        clip: str | CLIP | None = None,
        *,
        seed: int = 0,
    ) -> Perception:
        """Backends by spec string or object (see :mod:`video_env.backends.registry`).

        A role left ``None`` is simulated, except the captioner, which defaults to the VLM
        when that is a real model (FALCONEye and VideoAgent caption with their VLM).
        """
        from video_env.backends.registry import (
            make_captioner,
            make_clip,
            make_vlm,
            spec_is_simulated,
        )

        real_vlm = (
            not spec_is_simulated("vlm", vlm)
            if isinstance(vlm, str)
            else isinstance(vlm, Captioner) and not vlm.simulated
        )
        if captioner is None and real_vlm:
            captioner = vlm  # type: ignore[assignment]  # a real VLM object is a Captioner
        return cls(
            make_vlm(vlm or "simulated", seed=seed),
            make_captioner(captioner or "simulated", seed=seed),
            make_clip(clip or "simulated", seed=seed),
        )

    def for_roles(self, *roles: str) -> Perception:
        """A copy holding only ``roles`` (checked present).

        Unused roles then neither cost nor make a result simulated.

        Raises:
            ConfigError: If a role has no backend.
        """
        self.require(*roles)
        return dataclasses.replace(
            self, **{r: None for r in ("vlm", "captioner", "clip") if r not in roles}
        )

    @property
    def backends(self) -> list[VLM | Captioner | CLIP]:
        """The configured backends, each once (one model often serves several roles)."""
        unique: list[VLM | Captioner | CLIP] = []
        for backend in (self.vlm, self.captioner, self.clip):
            if backend is not None and all(backend is not b for b in unique):
                unique.append(backend)
        return unique

    @property
    def labels(self) -> frozenset[str]:
        """The provenance labels of its backends (:mod:`video_env.provenance`)."""
        return frozenset().union(*(object_labels(b) for b in self.backends))

    @property
    def simulated(self) -> bool:
        """Whether any configured backend is simulated (results must say so)."""
        return SIMULATED in self.labels

    @property
    def random_weights(self) -> bool:
        """Whether a backend was loaded from a random-weights test checkpoint."""
        return RANDOM_WEIGHTS in self.labels

    @property
    def is_pixel_real(self) -> bool:
        """Whether any configured backend is a pixel-real model (results must say so)."""
        return PIXEL_REAL in self.labels

    @property
    def is_pixel_vlm(self) -> bool:
        """Whether any backend is the pixel VLM (a tiny Qwen2.5-VL trained on the renderer)."""
        return PIXEL_VLM in self.labels

    @property
    def label(self) -> str:
        """``simulated``, ``pixel-vlm``, ``pixel-real`` or ``real``: how results are labelled."""
        return perception_label([record_flags(self.labels)]).partition(",")[0]

    def usage(self) -> Cost:
        """Total usage of all backends so far."""
        return sum((b.usage for b in self.backends), Cost())

    def require(self, *roles: str) -> None:
        """Raise :class:`ConfigError` unless every role has a backend."""
        missing = [r for r in roles if getattr(self, r) is None]
        if missing:
            raise ConfigError(f"this environment needs perception backends: {', '.join(missing)}")

    def video_for(
        self, sample: VideoQA, standin_missing: bool = False, reader: VideoReader | None = None
    ) -> VideoReader:
        """The video the env shows and its backends perceive for ``sample``.

        A synthetic sample is its own video. A real file's frames are always the file's:
        with simulated backends it comes as an :class:`AnnotatedVideo` whose ``world``
        (a stand-in built from the sample's annotations, at least as long as the file) is what
        those backends answer from. A missing file is an error unless ``standin_missing``
        is set; then the stand-in is the video, frames included (labelled ``stand-in``).
        ``reader``: an open reader of the sample's file to use (:func:`same_file_reader`);
        it is closed if the file is refused.

        Raises:
            VideoDecodeError: If the file is missing (without ``standin_missing``), empty
                or corrupt.
            ConfigError: If it lasts over ``MAX_DURATION_S``.
            SampleError: If an evidence interval starts more than
                :data:`EVIDENCE_SLACK_S` after the file's end.
        """
        if isinstance(sample.video, SynthVideo):
            return sample.video
        path = sample.video_path
        if path is not None and not os.path.exists(path):
            if not standin_missing:
                raise VideoDecodeError(
                    path,
                    f"no such file (sample {sample.id}); pass standin_missing_videos=True "
                    "(bench: --standin-missing-videos) to play a simulated stand-in built "
                    "from the annotations instead",
                )
            return standin_video(sample)
        reader = reader or open_video(sample.video)
        try:
            if not reader.duration <= MAX_DURATION_S:  # NaN too: spaces and rules are bounded
                raise ConfigError(
                    f"video {reader.name!r} lasts {reader.duration:g} s, over the "
                    f"{MAX_DURATION_S:g} s maximum (MAX_DURATION_S)"
                )
            late = reader.duration + EVIDENCE_SLACK_S
            past = [iv for iv in sample.gt_intervals if iv.start > late]
            if past:  # no answer window could overlap it: every GToU would read 0
                raise SampleError(
                    f"sample {sample.id}: its evidence [{past[0].start:g}, {past[0].end:g}] s "
                    f"starts after the end of {reader.name!r} ({reader.duration:g} s, "
                    f"{EVIDENCE_SLACK_S:g} s allowed for rounding): the annotations do not "
                    "describe this file"
                )
            if not self.simulated:
                return reader
            world = file_world(standin_video(sample, duration=reader.duration), reader.size)
        except BaseException:
            reader.close()
            raise
        return AnnotatedVideo(reader, world)


def resolve_perception(
    perception: Perception | str | None = None,
    *,
    vlm: str | VLM | None = None,
    captioner: str | Captioner | None = None,
    clip: str | CLIP | None = None,
) -> Perception:
    """The env's perception from its arguments.

    ``perception`` may be a :class:`Perception`, ``"simulated"`` or ``None`` (the offline
    default); ``vlm`` / ``captioner`` / ``clip`` (spec strings or backends) replace those
    roles.

    Raises:
        ConfigError: For another ``perception`` string.
    """
    if isinstance(perception, str):
        named = {"pixel-real": Perception.pixel_real, "pixel-vlm": Perception.pixel_vlm}
        if perception.strip() not in ("simulated", *named):
            raise ConfigError(
                f"perception {perception!r}: give 'simulated', 'pixel-real', 'pixel-vlm', a "
                "Perception, or the roles (vlm=, captioner=, clip=) as backend specs"
            )
        perception = named[perception.strip()]() if perception.strip() in named else None
    if vlm is None and captioner is None and clip is None:
        return perception or Perception.offline()
    if perception is None:
        return Perception.from_specs(vlm, captioner, clip)
    from video_env.backends.registry import make_captioner, make_clip, make_vlm

    return Perception(
        make_vlm(vlm) if vlm is not None else perception.vlm,
        make_captioner(captioner) if captioner is not None else perception.captioner,
        make_clip(clip) if clip is not None else perception.clip,
    )


def same_file_reader(video: VideoReader | None, sample: VideoQA) -> VideoReader | None:
    """``video``'s open reader when it decodes ``sample``'s file, else ``None``.

    An env keeps it for the next episode on the same file, so a bench over a dataset
    demuxes each file's frame index once per run of its questions, not once per episode.
    """
    reader = getattr(video, "reader", video)  # an AnnotatedVideo's file, or the file itself
    path = sample.video_path
    if reader is None or isinstance(reader, SynthVideo) or path is None or not os.path.isfile(path):
        return None
    return reader if os.path.abspath(str(reader.name)) == os.path.abspath(path) else None
