"""The synthetic world model: scenes, needles, and a video rendered on demand.

A :class:`SynthVideo` is a SIMULATED video: a timeline of scenes with short "needle"
events that each carry one fact. It implements the :class:`~video_env.video.VideoReader`
protocol (frames are drawn at any time and size, nothing is stored), and it exposes its
ground truth (what is on screen when) to the simulated perception backends. Policies
never see that ground truth: they see frames and backend outputs only.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from video_env.errors import ConfigError
from video_env.synth.elements import Needle, Scene
from video_env.synth.render import Renderer
from video_env.video.base import FrameArray, Size, Times, as_times
from video_env.video.resize import as_resize

#: Native size of synthetic videos (needle pixel sizes are given at this size).
NATIVE_SIZE = Size(1280, 720)
#: Nominal frame rate of synthetic videos.
SYNTH_FPS = 30.0


@dataclass(eq=False)
class SynthVideo:
    """A procedurally generated video that renders frames on demand (SIMULATED).

    Args:
        id: Video id.
        duration: Length in seconds.
        scenes: Scenes covering ``[0, duration]`` in order.
        needles: Needle events inside the video; their questions must be unique.
        seed: Seed of the procedural details (motion, textures).
        fps: Nominal frame rate: timestamps snap to the nearest ``k / fps``.
        native_size: Frame size when no size is requested.

    Raises:
        ConfigError: If scenes do not tile the video, a needle lies outside it, or two
            needles answer the same question.
    """

    id: str
    duration: float
    scenes: Sequence[Scene]
    needles: Sequence[Needle]
    seed: int = 0
    fps: float = SYNTH_FPS
    native_size: Size = NATIVE_SIZE
    _scene_starts: list[float] = field(init=False, repr=False)
    _by_question: dict[str, Needle] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.duration > 0 or not self.fps > 0:
            raise ConfigError(f"video {self.id}: duration and fps must be > 0")
        self.scenes = tuple(self.scenes)
        self.needles = tuple(sorted(self.needles, key=lambda n: n.start))
        self._check_scenes()
        self._by_question = {}
        for needle in self.needles:
            if needle.end > self.duration + 1e-6:
                raise ConfigError(
                    f"video {self.id}: needle {needle.id} ending at {needle.end} s lies outside "
                    f"the video (duration {self.duration} s)"
                )
            if needle.question in self._by_question:
                raise ConfigError(f"video {self.id}: two needles answer {needle.question!r}")
            self._by_question[needle.question] = needle
        self._scene_starts = [s.interval.start for s in self.scenes]
        self._renderer = Renderer(self)

    def _check_scenes(self) -> None:
        if not self.scenes:
            raise ConfigError(f"video {self.id}: no scenes")
        edges = [self.scenes[0].interval.start]
        for scene in self.scenes:
            if abs(scene.interval.start - edges[-1]) > 1e-6:
                raise ConfigError(f"video {self.id}: scenes leave a gap at {edges[-1]} s")
            edges.append(scene.interval.end)
        if abs(edges[0]) > 1e-6 or abs(edges[-1] - self.duration) > 1e-6:
            raise ConfigError(f"video {self.id}: scenes must cover [0, {self.duration}] s")

    # -- reader protocol -------------------------------------------------------------

    @property
    def name(self) -> str:
        """``synth:<id>``."""
        return f"synth:{self.id}"

    @property
    def num_frames(self) -> int:
        """Number of nominal frames."""
        return max(1, round(self.duration * self.fps))

    @property
    def size(self) -> Size:
        """Native frame size."""
        return self.native_size

    def snap(self, times: Times) -> npt.NDArray[np.float64]:
        """Validate timestamps and snap them to the nominal frame grid (ties: earlier)."""
        arr = as_times(times, self.duration, self.name)
        k = np.clip(np.ceil(arr * self.fps - 0.5), 0, self.num_frames - 1)
        snapped: npt.NDArray[np.float64] = k / self.fps
        return snapped

    def frames(self, times: Times, size: object = None) -> FrameArray:
        """Render frames at the given timestamps (see :class:`VideoReader`)."""
        resize = as_resize(size)
        target = resize.target(self.native_size) if resize is not None else self.native_size
        return self._renderer.render(self.snap(times), target)

    def close(self) -> None:
        """Drop cached backgrounds."""
        self._renderer.clear()

    def __enter__(self) -> SynthVideo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- ground truth (for simulated perception and annotations only) -----------------

    def scene_at(self, t: float) -> Scene:
        """The scene shown at time ``t``."""
        i = bisect.bisect_right(self._scene_starts, t) - 1
        return self.scenes[min(max(i, 0), len(self.scenes) - 1)]

    def needles_at(self, t: float) -> list[Needle]:
        """Needles on screen at time ``t``."""
        return [n for n in self.needles if n.visible(t)]

    def needle_boxes(self, t: float, size: Size) -> list[tuple[Needle, tuple[int, int, int, int]]]:
        """Needles drawn at ``t`` (snapped) in a frame of ``size``, each with its box.

        Boxes are ``(x0, y0, x1, y1)`` pixels of the drawn patch (they may reach past
        the frame); for training labels of the pixel VLM, never for a policy.
        """
        snapped = float(self.snap([t])[0])
        return [(n, self._renderer.needle_box(n, snapped, size)) for n in self.needles_at(snapped)]

    def needle_for(self, question: str) -> Needle | None:
        """The needle that answers ``question`` (exact text), if any."""
        return self._by_question.get(question.strip())

    def content_at(self, t: float) -> str:
        """Full description of what is on screen at ``t``: scene and needle facts."""
        parts = [self.scene_at(t).description, *(n.statement for n in self.needles_at(t))]
        return "; ".join(parts)

    def __repr__(self) -> str:
        return (
            f"SynthVideo({self.id!r}, {self.duration:.0f} s, {len(self.scenes)} scenes, "
            f"{len(self.needles)} needles)"
        )
