import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from video_env import BackendError, ConfigError, VideoQA
from video_env.metrics import (
    Embedder,
    EmbeddingJudge,
    ExactMatchJudge,
    Grade,
    Judge,
    exact_match,
    grade_answer,
)


class HashingEmbedder:
    """Bag of words hashed into 4096 buckets (crc32, stable across runs), L2-normalised."""

    def __init__(self, dim: int = 4096) -> None:
        self.dim = dim
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        self.calls += 1
        out = np.zeros((len(texts), self.dim))
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, zlib.crc32(word.encode()) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


class FixedEmbedder:
    def __init__(self, vectors: npt.ArrayLike) -> None:
        self.vectors = np.asarray(vectors, dtype=np.float64)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        return self.vectors


def test_protocols_are_satisfied() -> None:
    assert isinstance(ExactMatchJudge(), Judge)
    assert isinstance(EmbeddingJudge(HashingEmbedder()), Judge)
    assert isinstance(HashingEmbedder(), Embedder)


def test_grade_validates_its_score() -> None:
    assert Grade(True, 5) == Grade(True, 5.0)
    for bad in (-0.1, 5.1, float("nan")):
        with pytest.raises(ConfigError):
            Grade(False, bad)


@pytest.mark.parametrize(
    ("reference", "prediction", "hit"),
    [
        ("red", "Red.", True),
        ("2", "two", True),
        ("the red car", "Red car", True),
        ("red", "a red car", True),
        ("New York", "It is in new york city.", True),
        ("red", "reddish", False),
        ("red car", "car red", False),
        ("blue", "red", False),
        ("red", "", False),
        ("The", "the", True),
        ("The", "a", False),
    ],
)
def test_exact_match_judge(reference: str, prediction: str, hit: bool) -> None:
    assert exact_match(reference, prediction) is hit
    assert ExactMatchJudge().grade("Q?", reference, prediction) == Grade(hit, 5.0 if hit else 0.0)


def test_judges_reject_an_empty_reference() -> None:
    with pytest.raises(ConfigError, match="reference"):
        ExactMatchJudge().grade("Q?", "  ", "red")
    with pytest.raises(ConfigError, match="reference"):
        EmbeddingJudge(HashingEmbedder()).grade("Q?", "", "red")


def test_embedding_judge_maps_cosine_to_score() -> None:
    embedder = HashingEmbedder()
    judge = EmbeddingJudge(embedder, threshold=4.0, exact_first=False)
    assert judge.grade("Q?", "red car", "car red") == Grade(True, 5.0)  # same bag of words
    assert judge.grade("Q?", "red car", "blue truck") == Grade(False, 0.0)
    half = judge.grade("Q?", "red car", "red truck")  # cosine 1/2
    assert half.score == pytest.approx(2.5) and not half.correct
    lenient = EmbeddingJudge(embedder, threshold=2.5, exact_first=False)
    assert lenient.grade("Q?", "red car", "red truck").correct


def test_embedding_judge_low_and_high_stretch_the_scale() -> None:
    judge = EmbeddingJudge(HashingEmbedder(), low=0.5, high=1.0)
    assert judge.score_of(0.5) == 0.0
    assert judge.score_of(0.75) == pytest.approx(2.5)
    assert judge.score_of(-1.0) == 0.0
    assert judge.score_of(1.0) == 5.0


def test_embedding_judge_exact_first_and_blank_prediction_skip_the_embedder() -> None:
    embedder = HashingEmbedder()
    judge = EmbeddingJudge(embedder)
    assert judge.grade("Q?", "red", "It is red.") == Grade(True, 5.0)
    assert judge.grade("Q?", "red", "   ") == Grade(False, 0.0)
    assert embedder.calls == 0
    judge.grade("Q?", "red", "blue")
    assert embedder.calls == 1


def test_embedding_judge_normalises_rows_and_clamps_negative_cosine() -> None:
    judge = EmbeddingJudge(FixedEmbedder([[3.0, 0.0], [-2.0, 0.0]]), exact_first=False)
    assert judge.similarity("x", "y") == pytest.approx(-1.0)
    assert judge.grade("Q?", "x", "y") == Grade(False, 0.0)


@pytest.mark.parametrize(
    "vectors", [[[1.0, 0.0]], [[1.0, 0.0], [0.0, 0.0]], [[1.0, np.nan], [1.0, 0.0]], [1.0, 0.0]]
)
def test_embedding_judge_rejects_bad_embeddings(vectors: npt.ArrayLike) -> None:
    judge = EmbeddingJudge(FixedEmbedder(vectors), exact_first=False)
    with pytest.raises(BackendError):
        judge.grade("Q?", "x", "y")


@pytest.mark.parametrize("kwargs", [{"threshold": 6.0}, {"low": 0.5, "high": 0.5}, {"low": -2.0}])
def test_embedding_judge_rejects_bad_settings(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        EmbeddingJudge(HashingEmbedder(), **kwargs)


class RecordingJudge:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def grade(self, question: str, reference: str, prediction: str) -> Grade:
        self.seen.append((question, reference, prediction))
        return Grade(False, 1.5)


def _sample(answer: str | None, options: tuple[str, ...] | None = None) -> VideoQA:
    return VideoQA(id="s", video="v.mp4", question="What colour?", answer=answer, options=options)


def test_grade_answer_mcq() -> None:
    sample = _sample("B", ("red", "blue"))
    assert grade_answer(sample, "(B)") == Grade(True, 5.0)
    assert grade_answer(sample, "blue") == Grade(True, 5.0)
    assert grade_answer(sample, "A") == Grade(False, 0.0)
    assert grade_answer(sample, "red or blue") == Grade(False, 0.0)
    judge = RecordingJudge()
    assert grade_answer(sample, "B", judge) == Grade(True, 5.0)
    assert judge.seen == []  # MCQs never reach the judge


def test_grade_answer_open() -> None:
    assert grade_answer(_sample("red"), "It is red") == Grade(True, 5.0)
    assert grade_answer(_sample("red"), "blue") == Grade(False, 0.0)
    judge = RecordingJudge()
    assert grade_answer(_sample("red"), "crimson", judge) == Grade(False, 1.5)
    assert judge.seen == [("What colour?", "red", "crimson")]


def test_grade_answer_unknown_answer_and_missing_prediction() -> None:
    assert grade_answer(_sample(None), "red") is None
    assert grade_answer(_sample(None, ("red", "blue")), "A") is None
    assert grade_answer(_sample("red"), None) == Grade(False, 0.0)
    assert grade_answer(_sample("A", ("red", "blue")), None) == Grade(False, 0.0)
