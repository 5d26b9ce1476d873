"""Judges of open answers and the per-sample grading entry point.

A judge compares a prediction with a reference answer and returns a :class:`Grade`: a
verdict and a 0-5 score (the 0-5 scale of LLM judges in video QA benchmarks).

* :class:`ExactMatchJudge` — correct (score 5) when the normalised prediction equals the
  normalised reference, or contains it as whole words (``"a red car"`` is correct for the
  reference ``"red"``); otherwise wrong (score 0). Lenient by design: a prediction that
  lists several candidates, or negates the reference (``"not red"``), is still correct.
* :class:`EmbeddingJudge` — maps the cosine similarity ``s`` of the two answers' sentence
  embeddings linearly to ``score = 5 · clip((s − low) / (high − low), 0, 1)`` (defaults
  ``low = 0``, ``high = 1``, i.e. ``5 · max(s, 0)``), correct when ``score ≥ threshold``
  (default 4, i.e. ``s ≥ 0.8``). A normalised exact match scores 5 without embedding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from video_env.errors import BackendError, ConfigError
from video_env.metrics.answers import mcq_correct, normalize_text
from video_env.types import VideoQA

__all__ = [
    "MAX_SCORE",
    "Embedder",
    "EmbeddingJudge",
    "ExactMatchJudge",
    "Grade",
    "Judge",
    "exact_match",
    "grade_answer",
]

#: Top of the judge score scale (scores lie in ``[0, MAX_SCORE]``).
MAX_SCORE = 5.0


@dataclass(frozen=True)
class Grade:
    """The verdict on one answer.

    Args:
        correct: Whether the answer counts as correct.
        score: Graded quality in ``[0, 5]``.
        error: Why grading failed, when a failed grading was counted as wrong (the
            released FALCON-Bench rule, :class:`~video_env.metrics.llm_judge.LLMJudge`);
            the episode records it as a judge error either way.

    Raises:
        ConfigError: If ``score`` is not a finite number in ``[0, 5]``.
    """

    correct: bool
    score: float
    error: str | None = None

    def __post_init__(self) -> None:
        score = float(self.score)
        if not (math.isfinite(score) and 0.0 <= score <= MAX_SCORE):
            raise ConfigError(f"a grade's score lies in [0, {MAX_SCORE}], got {self.score!r}")
        object.__setattr__(self, "score", score)
        object.__setattr__(self, "correct", bool(self.correct))


@runtime_checkable
class Judge(Protocol):
    """Grades an open answer against a reference."""

    def grade(self, question: str, reference: str, prediction: str) -> Grade:
        """Grade ``prediction`` against ``reference`` for ``question``."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Embeds texts as rows of a float array, one L2-normalised row per text."""

    def embed(self, texts: Sequence[str]) -> npt.NDArray[Any]:
        """Embed ``texts`` into an ``(N, D)`` float array."""
        ...


def _check_reference(reference: str) -> None:
    if not isinstance(reference, str) or not reference.strip():
        raise ConfigError(f"the reference answer must be a non-empty string, got {reference!r}")


def exact_match(reference: str, prediction: str) -> bool:
    """Normalised exact match or whole-word containment of the reference.

    When the reference normalises to nothing (e.g. ``"the"`` or ``"?"``), the case-folded,
    stripped strings are compared instead.

    Args:
        reference: The reference answer.
        prediction: The predicted answer.

    Returns:
        Whether the prediction matches the reference.
    """
    ref, pred = normalize_text(reference), normalize_text(prediction)
    if not ref:
        return reference.strip().casefold() == prediction.strip().casefold()
    return ref == pred or f" {ref} " in f" {pred} "


class ExactMatchJudge:
    """Judge by normalised exact match or whole-word containment (scores 5 or 0)."""

    def grade(self, question: str, reference: str, prediction: str) -> Grade:
        """Grade ``prediction`` against ``reference``.

        Args:
            question: The question (unused; part of the judge protocol).
            reference: The reference answer, non-empty.
            prediction: The predicted answer.

        Returns:
            ``Grade(True, 5.0)`` on a match, else ``Grade(False, 0.0)``.

        Raises:
            ConfigError: If the reference is empty.
        """
        _check_reference(reference)
        hit = exact_match(reference, prediction)
        return Grade(hit, MAX_SCORE if hit else 0.0)


class EmbeddingJudge:
    """Judge by cosine similarity of sentence embeddings.

    Args:
        embedder: Any object with ``embed(texts) -> (N, D)`` float array.
        threshold: Score at or above which an answer is correct, in ``[0, 5]``.
        low: Cosine similarity mapped to score 0 (and everything below it).
        high: Cosine similarity mapped to score 5 (and everything above it).
        exact_first: Score a normalised exact/containment match 5 without embedding.

    Raises:
        ConfigError: If ``threshold`` is outside ``[0, 5]`` or not ``-1 ≤ low < high ≤ 1``.
    """

    def __init__(
        self,
        embedder: Embedder,
        threshold: float = 4.0,
        *,
        low: float = 0.0,
        high: float = 1.0,
        exact_first: bool = True,
    ) -> None:
        if not (math.isfinite(threshold) and 0.0 <= threshold <= MAX_SCORE):
            raise ConfigError(f"threshold must lie in [0, {MAX_SCORE}], got {threshold!r}")
        if not -1.0 <= low < high <= 1.0:
            raise ConfigError(f"need -1 <= low < high <= 1, got low={low!r}, high={high!r}")
        self.embedder = embedder
        self.threshold = float(threshold)
        self.low = float(low)
        self.high = float(high)
        self.exact_first = exact_first

    def score_of(self, similarity: float) -> float:
        """Map a cosine similarity to a 0-5 score: ``5 · clip((s − low)/(high − low), 0, 1)``."""
        fraction = (similarity - self.low) / (self.high - self.low)
        return MAX_SCORE * min(max(fraction, 0.0), 1.0)

    def similarity(self, reference: str, prediction: str) -> float:
        """Cosine similarity of the two texts' embeddings.

        Raises:
            BackendError: If the embedder returns anything but two finite, non-zero rows.
        """
        vectors = np.asarray(self.embedder.embed([reference, prediction]), dtype=np.float64)
        if vectors.ndim != 2 or vectors.shape[0] != 2 or vectors.shape[1] == 0:
            raise BackendError(f"embedder returned shape {vectors.shape}, expected (2, D)")
        norms = np.linalg.norm(vectors, axis=1)
        if not (np.all(np.isfinite(vectors)) and np.all(norms > 0)):
            raise BackendError("embedder returned a non-finite or all-zero embedding")
        cosine = float(vectors[0] @ vectors[1] / (norms[0] * norms[1]))
        return min(max(cosine, -1.0), 1.0)

    def grade(self, question: str, reference: str, prediction: str) -> Grade:
        """Grade ``prediction`` against ``reference``.

        Args:
            question: The question (unused; part of the judge protocol).
            reference: The reference answer, non-empty.
            prediction: The predicted answer; a blank one scores 0 without embedding.

        Returns:
            The grade; correct when the score reaches the threshold.

        Raises:
            ConfigError: If the reference is empty.
            BackendError: If the embedder misbehaves.
        """
        _check_reference(reference)
        if not prediction.strip():
            return Grade(False, 0.0)
        if self.exact_first and exact_match(reference, prediction):
            return Grade(True, MAX_SCORE)
        score = self.score_of(self.similarity(reference, prediction))
        return Grade(score >= self.threshold, score)


def grade_answer(
    sample: VideoQA, prediction: str | None, judge: Judge | None = None
) -> Grade | None:
    """Grade a prediction for a sample: MCQ by option extraction, open answers by a judge.

    Args:
        sample: The question, with its reference answer.
        prediction: The agent's answer; ``None`` (no answer given) is wrong with score 0.
        judge: Judge of open answers; defaults to :class:`ExactMatchJudge`.

    Returns:
        ``None`` when the sample's answer is unknown (such samples are excluded from
        accuracy); for an MCQ ``Grade(True, 5.0)`` or ``Grade(False, 0.0)``; for an open
        question the judge's grade.
    """
    if sample.answer is None:
        return None
    if prediction is None:
        return Grade(False, 0.0)
    if sample.is_mcq:
        hit = mcq_correct(prediction, sample)
        return Grade(hit, MAX_SCORE if hit else 0.0)
    return (judge or ExactMatchJudge()).grade(sample.question, sample.answer, prediction)
