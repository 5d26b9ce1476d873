"""A scripted teacher that reads the ground truth — for tests and offline demos ONLY.

:class:`GroundTruthScriptedTeacher` is not a model and must never be evaluated as a
policy: it is told the question's answer and evidence window before each episode and
plays VideoScout's Think-Act format with them (watch at 1x until the window on screen
touches the evidence, then answer with the evidence window). It exists so that the
distillation pipeline (rejection sampling, validation, the dataset) runs end to end
offline; real teachers are VLMs (``openai:MODEL`` for a Gemini/GPT-4o/Qwen-72B server,
``qwen2.5-vl:PATH``). ``mistake_rate`` makes it answer wrongly now and then, so that
rejection sampling has something to reject.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from video_env._seeding import stable_seed
from video_env.backends.base import FrameBatch, VisionMessage
from video_env.backends.llm.base import Completion
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost
from video_env.types import VideoQA

__all__ = ["GroundTruthScriptedTeacher", "frame_times", "scripted_completion"]

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class GroundTruthScriptedTeacher:
    """A scripted :class:`VisionChat` teacher that knows each question's answer window.

    Args:
        mistake_rate: Probability of answering a wrong option (MCQ) at the evidence.
        seed: Seed of the mistakes (each question and attempt gets its own stream).
    """

    name = "ground-truth-scripted-teacher"
    simulated = True

    def __init__(self, mistake_rate: float = 0.0, seed: int = 0) -> None:
        if not 0.0 <= mistake_rate <= 1.0:
            raise ConfigError(f"mistake_rate must be in [0, 1], got {mistake_rate}")
        self.mistake_rate = mistake_rate
        self.seed = seed
        self.usage = Cost()
        self._sample: VideoQA | None = None
        self._rng = random.Random(seed)

    def begin_question(self, sample: VideoQA, attempt: int) -> None:
        """Learn the answer and evidence of the next episode (the distiller calls this)."""
        if not sample.gt_intervals or sample.answer is None:
            raise ConfigError(f"{sample.id}: the scripted teacher needs an answer and its window")
        self._sample = sample
        self._rng = random.Random(stable_seed("teacher", self.seed, sample.id, attempt))

    def chat(
        self,
        messages: Sequence[VisionMessage],
        *,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
    ) -> Completion:
        """The next Think-Act reply for the window shown in ``messages``."""
        sample = self._sample
        if sample is None:
            raise ConfigError("call begin_question(sample, attempt) before each episode")
        times = [t for m in messages for t in frame_times(m)]
        start, end = (min(times), max(times)) if times else (0.0, 0.0)
        evidence = [iv for iv in sample.gt_intervals if iv.start <= end and iv.end >= start]
        if not evidence:
            text = (
                f"<think>Nothing about the question between {start:.0f} s and {end:.0f} s, "
                f"so I keep watching.</think><memory>Nothing relevant up to {end:.0f} s."
                "</memory><action>speed(1x)</action>"
            )
        else:
            text = self._answer(sample, evidence[0].start, evidence[0].end)
        self.usage = self.usage + Cost(llm_calls=1)
        return scripted_completion(self.name, text)

    def _answer(self, sample: VideoQA, start: float, end: float) -> str:
        answer = str(sample.answer)
        if sample.options and self._rng.random() < self.mistake_rate:
            wrong = [c for c in _LETTERS[: len(sample.options)] if c != answer]
            answer = self._rng.choice(wrong)
        shown = answer
        if sample.options:
            shown = f"{answer} ({sample.options[_LETTERS.index(answer)]})"
        return (
            f"<think>The evidence is between {start:.0f} s and {end:.0f} s: the answer is "
            f"{shown}.</think><memory>Evidence at {start:.0f}-{end:.0f} s: {shown}.</memory>"
            f'<action>answer("{answer}", [{start:.0f}, {end:.0f}])</action>'
        )


def scripted_completion(name: str, text: str) -> Completion:
    """A scripted teacher's reply as a model's :class:`Completion` (words as its tokens)."""
    return Completion(
        text=text,
        model=name,
        prompt_tokens=0,
        completion_tokens=len(text.split()),
        finish_reason="stop",
    )


def frame_times(message: VisionMessage) -> list[float]:
    """The timestamps of every frame a chat message shows."""
    content = message.get("content", "")
    if isinstance(content, str):
        return []
    return [float(t) for part in content if isinstance(part, FrameBatch) for t in part.times]
