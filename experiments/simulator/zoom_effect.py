"""The zoom-in effect measured from pixels, next to the simulator's curve.

For each MCQ about a needle (visual and object needles by default), a VLM is asked the
question on

- **windows of growing length** centred on the needle's evidence, sampled by Zoom's rules
  (:class:`~video_env.envs.zoom_rules.ZoomRules`: frame count and pixel budget per window
  length), as FALCONEye's zoom sees them;
- **a fixed 5 s window inside the evidence** at growing frame widths (16:9 frames).

The pixel-real VLM's accuracy (correct answers / questions) is put beside the simulated
VLM's *expected* accuracy on the same frames, ``π = p + (1 − p) / n_options`` with ``p``
the simulator's perception model (docs/simulator.md): the simulator's curve without its
sampling noise. Annotations are read here only to place the windows and to grade, as a
study design does; no policy is involved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from video_env.backends.base import VLM, FrameBatch
from video_env.backends.simulated.model import SensorSettings
from video_env.envs.zoom_rules import ZoomRules
from video_env.synth.elements import Needle
from video_env.synth.world import SynthVideo
from video_env.types import Interval, VideoQA
from video_env.video.base import Size
from video_env.video.sampling import uniform_times

#: Window lengths (seconds) of the window curve.
WINDOW_LENGTHS = (5.0, 10.0, 20.0, 40.0, 60.0, 120.0, 300.0)
#: Frame widths (16:9 frames) of the resolution curve.
FRAME_WIDTHS = (160, 224, 320, 448, 672, 960, 1280)
#: Length of the resolution curve's window (inside every needle: needles last >= 5 s).
RESOLUTION_WINDOW_S = 5.0


@dataclass(frozen=True)
class CurvePoint:
    """Accuracy at one setting of a curve.

    Attributes:
        axis: ``window_s`` (window length) or ``width`` (frame width in pixels).
        value: The setting.
        questions: Questions asked.
        simulated: The simulated VLM's expected accuracy.
        pixel_real: The pixel-real VLM's accuracy.
        frames: Frames per question (Zoom's rule for the window curve).
        size: Frame size (width x height) of the first question.
    """

    axis: str
    value: float
    questions: int
    simulated: float
    pixel_real: float
    frames: int
    size: str

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict."""
        return asdict(self)


def needle_of(sample: VideoQA) -> Needle:
    """The needle a synthetic sample asks about.

    Raises:
        ValueError: If the sample is not a needle question of a synthetic video.
    """
    video = sample.video
    needle_id = sample.meta.get("needle_id")
    if not isinstance(video, SynthVideo) or needle_id is None:
        raise ValueError(f"{sample.id} is not a needle question of a synthetic video")
    return next(n for n in video.needles if n.id == needle_id)


def centred_window(evidence: Interval, length: float, duration: float) -> Interval:
    """A window of ``length`` seconds centred on ``evidence``, shifted to fit the video."""
    length = min(length, duration)
    start = (evidence.start + evidence.end) / 2 - length / 2
    start = min(max(0.0, start), duration - length)
    return Interval(round(start, 3), round(start + length, 3))


def expected_simulated_accuracy(
    needle: Needle, frames: FrameBatch, native: Size, n_options: int, sensor: SensorSettings
) -> float:
    """The simulated VLM's chance of a correct MCQ answer on ``frames``: ``p + (1 - p) / n``."""
    p = sensor.perceive(needle, frames, native)[0]
    return p + (1.0 - p) / n_options


def _point(
    axis: str,
    value: float,
    samples: Sequence[VideoQA],
    batches: Sequence[FrameBatch],
    vlm: VLM,
    sensor: SensorSettings,
) -> CurvePoint:
    simulated = pixel = 0.0
    for sample, batch in zip(samples, batches, strict=True):
        options = sample.options or ()
        video = batch.video
        native = video.size
        simulated += expected_simulated_accuracy(
            needle_of(sample), batch, native, len(options), sensor
        )
        pixel += float(vlm.answer(batch, sample.question, options).text == sample.answer)
    n = len(samples)
    first = batches[0]
    return CurvePoint(
        axis,
        value,
        n,
        round(simulated / n, 4),
        round(pixel / n, 4),
        len(first),
        f"{first.size.width}x{first.size.height}",
    )


def window_curve(
    samples: Sequence[VideoQA],
    vlm: VLM,
    lengths: Sequence[float] = WINDOW_LENGTHS,
    rules: ZoomRules | None = None,
    sensor: SensorSettings | None = None,
) -> list[CurvePoint]:
    """Accuracy against window length (Zoom's frames and resolution per length)."""
    rules, sensor = rules or ZoomRules(), sensor or SensorSettings()
    points = []
    for length in lengths:
        batches = []
        for sample in samples:
            video = sample.video
            assert isinstance(video, SynthVideo)  # checked by needle_of
            window = centred_window(sample.gt_intervals[0], length, video.duration)
            n = rules.n_frames(window.length)
            batches.append(FrameBatch.sample(video, window, n, rules.resize(window.length)))
        points.append(_point("window_s", length, samples, batches, vlm, sensor))
    return points


def resolution_curve(
    samples: Sequence[VideoQA],
    vlm: VLM,
    widths: Sequence[int] = FRAME_WIDTHS,
    rules: ZoomRules | None = None,
    sensor: SensorSettings | None = None,
) -> list[CurvePoint]:
    """Accuracy against frame width on a 5 s window inside the evidence (16:9 frames)."""
    rules, sensor = rules or ZoomRules(), sensor or SensorSettings()
    n = rules.n_frames(RESOLUTION_WINDOW_S)
    points = []
    for width in widths:
        size = Size(width, round(width * 9 / 16))
        batches = []
        for sample in samples:
            video = sample.video
            assert isinstance(video, SynthVideo)
            window = centred_window(sample.gt_intervals[0], RESOLUTION_WINDOW_S, video.duration)
            batches.append(FrameBatch(video, uniform_times(window, n), size))
        points.append(_point("width", width, samples, batches, vlm, sensor))
    return points


def needle_mcqs(samples: Sequence[VideoQA], categories: Sequence[str]) -> list[VideoQA]:
    """The MCQs of ``categories`` among ``samples``."""
    return [s for s in samples if s.options and s.category in categories]
