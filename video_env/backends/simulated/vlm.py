"""A SIMULATED VLM: answers from the world's ground truth through a noisy sensor model.

Outcome model (all settings in :class:`SimVLMSettings`):

1. ``p = perceive(needle, frames)`` from :mod:`video_env.backends.simulated.model`.
2. Unperceived facts are guessed: ``pi = p + (1 - p) * g`` with ``g = 1 / n_options``
   for MCQs and 0 for open questions; so with no evidence an MCQ is at chance.
3. **Calibration model.** With calibration error ``e`` (``> 0`` overconfident), the
   reported confidence is ``c = e + (1 - e) * B`` with ``B ~ Beta(m * kappa, (1 - m) * kappa)``
   and ``m = pi / (1 - e)``; the answer is then correct with probability ``c - e``. So
   ``E[correct] = pi`` and, in every confidence bin, accuracy = confidence - ``e``:
   the expected ACE equals ``|e|`` (``e < 0`` mirrors this: underconfident). The mean
   of ``B`` is capped at 0.97, so accuracy is capped near ``0.97 * (1 - |e|)``; for
   ``e < 0`` accuracy is floored at ``|e|``.
4. A wrong answer is a distractor (a misreading) or, for an open question without
   evidence, an abstention with probability ``abstain_rate``.

Every call is deterministic: its random draws are seeded by (seed, video, question,
options, timestamps, size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from video_env._seeding import stable_seed
from video_env.backends.base import Answer, FrameBatch
from video_env.backends.simulated.model import SeededRole, SensorSettings, world_of
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost
from video_env.types import OPTION_LETTERS
from video_env.video.sampling import qwen_visual_tokens

ABSTAIN_TEXT = "I cannot tell from these frames."
#: Largest mean of the confidence draw ``B`` (keeps confidences spread below 1).
_MAX_MEAN = 0.97


@dataclass(frozen=True)
class SimVLMSettings:
    """Settings of :class:`SimulatedVLM`.

    Attributes:
        sensor: The perception model.
        calibration_error: Signed calibration gap ``e`` (expected ACE is ``|e|``).
        concentration: ``kappa``: how tightly confidences gather around their mean.
        abstain_rate: Chance that an unperceived open question is answered "cannot tell".
    """

    sensor: SensorSettings = field(default_factory=SensorSettings)
    calibration_error: float = 0.05
    concentration: float = 6.0
    abstain_rate: float = 0.3

    def __post_init__(self) -> None:
        if not -0.5 < self.calibration_error < 0.5:
            raise ConfigError("calibration_error must lie in (-0.5, 0.5)")
        if self.concentration <= 0 or not 0 <= self.abstain_rate <= 1:
            raise ConfigError("concentration must be > 0 and abstain_rate in [0, 1]")


def calibrated_draw(
    rng: np.random.Generator, pi: float, error: float, concentration: float
) -> tuple[float, bool]:
    """Draw ``(confidence, correct)`` with ``P(correct) = pi`` and a gap of ``error``."""
    gap = abs(error)
    if error >= 0:
        pi = min(pi, 1 - gap)
        m = pi / (1 - gap)
    else:
        pi = max(pi, gap)
        m = (pi - gap) / (1 - gap)
    m = min(max(m, 1e-4), _MAX_MEAN)
    b = float(rng.beta(m * concentration, (1 - m) * concentration))
    confidence = gap + (1 - gap) * b if error >= 0 else (1 - gap) * b
    p_correct = confidence - error
    return confidence, bool(rng.random() < p_correct)


class SimulatedVLM(SeededRole):
    """A simulated VLM (see the module docstring). Labelled ``simulated`` everywhere.

    Args:
        settings: Model settings.
        seed: A different seed gives a different but equally distributed model.
    """

    def __init__(self, settings: SimVLMSettings | None = None, seed: int = 0) -> None:
        super().__init__("vlm", seed)
        self.settings = settings or SimVLMSettings()

    def answer(
        self, frames: FrameBatch, question: str, options: Sequence[str] | None = None
    ) -> Answer:
        """Answer ``question`` from ``frames``; MCQ answers are option letters."""
        world = world_of(frames, self.name)
        needle = world.needle_for(question)
        rng = np.random.default_rng(self._call_seed(frames, question, options))
        p = self.settings.sensor.perceive(needle, frames, world.size)[0] if needle else 0.0
        guess = 1.0 / len(options) if options else 0.0
        pi = p + (1.0 - p) * guess
        s = self.settings
        confidence, correct = calibrated_draw(rng, pi, s.calibration_error, s.concentration)
        text = self._text(rng, correct, p > 0, needle.fact if needle else None, options, needle)
        tokens = qwen_visual_tokens(frames.size, len(frames))
        self.usage = self.usage + Cost(vlm_calls=1, frames=len(frames), visual_tokens=tokens)
        # FALCONEye's confidence of an open answer is the geometric mean of its tokens' top-1
        # probabilities: equal per-token probabilities equal to the confidence (one per word).
        n_tokens = 1 if options else max(1, len(text.split()))
        return Answer(text, confidence, (confidence,) * n_tokens, tokens)

    def _text(
        self,
        rng: np.random.Generator,
        correct: bool,
        had_evidence: bool,
        fact: str | None,
        options: Sequence[str] | None,
        needle: object,
    ) -> str:
        distractors = list(getattr(needle, "distractors", ()))
        if options:
            letters = OPTION_LETTERS[: len(options)]
            truth = options.index(fact) if fact in options else None
            if correct and truth is not None:
                return letters[truth]
            wrong = [letters[i] for i in range(len(options)) if i != truth]
            return str(rng.choice(wrong))
        if correct and fact is not None:
            return fact
        if not had_evidence and (not distractors or rng.random() < self.settings.abstain_rate):
            return ABSTAIN_TEXT
        return str(rng.choice(distractors)) if distractors else ABSTAIN_TEXT

    def _call_seed(self, frames: FrameBatch, question: str, options: Sequence[str] | None) -> int:
        stamp = np.round(np.asarray(frames.times, dtype=np.float64), 3).tobytes().hex()
        return stable_seed(
            self.seed, self.episode_seed, frames.video.name, question, options, stamp, frames.size
        )
