"""Shared reasoning tools: the documented offline reasoner and the JSON LLM call.

The offline reasoner stands in for an LLM when none is configured. It is a heuristic on
the text embedder (MiniLM when installed, else the lexical fallback), never presented as
the papers' agents: policies using it carry ``[offline]`` in their names.

- *relevance*: cosine between the question (with the options) and each caption;
- *option matching*: an option scores 1 when its text appears as whole words in a caption
  clause, else half the best cosine between the option and a clause;
- *open answers*: the caption clause most relevant to the question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from video_env.backends.base import TextEmbedder, similarities
from video_env.backends.llm.base import LLM
from video_env.backends.llm.json_reply import ReplyFormatError, parse_json_object
from video_env.backends.text import default_text_embedder
from video_env.errors import BackendError
from video_env.metrics.answers import normalize_text
from video_env.types import OPTION_LETTERS


def clauses(caption: str) -> list[str]:
    """A caption's clauses (captions join statements with ``;``)."""
    return [c.strip() for c in caption.split(";") if c.strip()]


@dataclass
class OfflineReasoner:
    """The heuristic reasoner of ``[offline]`` policies (see the module docstring).

    Args:
        embedder: Text embedder (default: the shared default one).
    """

    embedder: TextEmbedder | None = None

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.embedder is None:
            self.embedder = default_text_embedder()
        return self.embedder.embed(list(texts))

    def relevance(self, question: str, options: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        """Cosine of each text with the question (and its options)."""
        if not texts:
            return np.zeros(0)
        query = " ".join([question, *options])
        vectors = self._embed([query, *texts])
        return similarities(vectors[1:], vectors[0])

    def option_scores(self, options: Sequence[str], captions: Sequence[str]) -> np.ndarray:
        """How strongly the captions support each option (see the module docstring)."""
        parts = [c for caption in captions for c in clauses(caption)]
        scores = np.zeros(len(options))
        if not parts or not options:
            return scores
        normalised = [f" {normalize_text(p)} " for p in parts]
        vectors = self._embed([*options, *parts])
        cosines = np.stack(
            [similarities(vectors[len(options) :], v) for v in vectors[: len(options)]]
        )
        for i, option in enumerate(options):
            needle = f" {normalize_text(option)} "
            if needle.strip() and any(needle in p for p in normalised):
                scores[i] = 1.0
            else:
                scores[i] = 0.5 * float(cosines[i].max())
        return scores

    def answer(
        self, question: str, options: Sequence[str], captions: Sequence[str]
    ) -> tuple[str, float, int | None]:
        """Answer from captions: ``(answer, score, index of the supporting caption)``.

        MCQs give an option letter; open questions the most relevant caption clause.
        """
        if not captions:
            return (OPTION_LETTERS[0] if options else "unknown"), 0.0, None
        if options:
            scores = self.option_scores(options, captions)
            best = int(np.argmax(scores))
            support = self.supporting_caption(options[best], captions)
            return OPTION_LETTERS[best], float(scores[best]), support
        parts = [(i, c) for i, caption in enumerate(captions) for c in clauses(caption)]
        rel = self.relevance(question, (), [c for _, c in parts])
        best = int(np.argmax(rel))
        return parts[best][1], float(rel[best]), parts[best][0]

    def supporting_caption(self, text: str, captions: Sequence[str]) -> int:
        """Index of the caption that best supports ``text``."""
        scores = [float(self.option_scores([text], [c])[0]) for c in captions]
        return int(np.argmax(scores))


_NON_ANSWER = re.compile(
    r"\b(cannot|can ?not|can't|unable to|impossible to|not possible to|no way to)\b"
    r"|\b(not (visible|shown|clear|sure|enough|determinable)|unclear|unknown|no answer)\b"
    r"|\b(do not|don't|does not|doesn't) (know|see|show|appear)\b"
    r"|^\s*(n/?a|none|nan|null|-+|\?+)\s*\.?\s*$",
    re.IGNORECASE,
)


def is_non_answer(text: str) -> bool:
    """Whether a VLM reply declines to answer (a refusal, "unknown", empty text).

    The offline reasoner's stand-in for FALCONEye's LLM judging an open answer's
    completeness: a confident refusal ("I cannot tell from these frames.") is no answer.
    """
    return not text.strip() or _NON_ANSWER.search(text) is not None


@dataclass
class JsonCaller:
    """Asks an LLM for a JSON object; re-asks once; counts replies it could and could not use.

    Args:
        llm: The model.
        max_tokens: Cap on the reply.
        reask: Re-ask once after an unusable reply (``False``: one call, as VideoAgent's
            released ``main.py``, which parses what it gets).

    Attributes:
        failures: Questions that got no usable reply (after the re-ask, if any).
        reasks: Re-asks made (each one an extra LLM call).
        used: Questions that got a usable reply (a JSON object with the required keys).
    """

    llm: LLM
    max_tokens: int = 768
    reask: bool = True
    failures: int = 0
    reasks: int = 0
    used: int = 0
    errors: list[str] = field(default_factory=list)

    def ask(self, prompt: str, required: Sequence[str] = ()) -> dict[str, Any] | None:
        """The reply as a dict with the ``required`` keys, or ``None`` (failure counted)."""
        messages = [{"role": "user", "content": prompt}]
        problem = ""
        attempts = 2 if self.reask else 1
        for attempt in range(attempts):
            text = ""
            try:
                text = self.llm.chat(messages, json=True, max_tokens=self.max_tokens).text
                value = parse_json_object(text)
            except ReplyFormatError as exc:
                problem = f"no JSON object ({exc})"
            except BackendError as exc:
                self._fail(f"LLM call failed: {exc}")
                return None
            else:
                missing = [k for k in required if k not in value]
                if not missing:
                    self.used += 1
                    return value
                problem = f"missing keys {missing}"
            if attempt + 1 < attempts:
                self.reasks += 1
                retry = f"Your reply had {problem}. Reply with the JSON object only, as asked."
                messages += [
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": retry},
                ]
        self._fail(problem)
        return None

    def _fail(self, message: str) -> None:
        self.failures += 1
        self.errors.append(message)


def window_from(value: Any, duration: float) -> tuple[float, float] | None:
    """A ``[start, end]`` from an LLM reply, clipped to the video; ``None`` if unusable."""
    if isinstance(value, str):
        numbers = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", value)[:2]]
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        try:
            numbers = [float(value[0]), float(value[1])]
        except (TypeError, ValueError):
            return None
    else:
        return None
    if len(numbers) != 2:
        return None
    start, end = sorted(numbers)
    start, end = max(0.0, min(start, duration)), max(0.0, min(end, duration))
    return (start, end) if end > start else None
