"""An LLM judge of open answers with FALCON-Bench's protocol.

FALCON-Bench (the FALCONEye release, lmms-eval task ``FALCONBench``, judge
``gpt-4o-mini`` at temperature 0) asks the judge for a yes/no verdict and an integer score
0-5 as a small dictionary (``{"pred": "yes", "score": 4}``); accuracy is the share of
``yes``, the score the mean score, and a score that is not an integer counts 0. Our
prompts (``metrics/prompts/llm_judge_*.txt``) follow that structure and ask for JSON; the
reply is parsed leniently (json-repair: single quotes, code fences, prose around it).

Verdicts are cached on disk by (question, reference, prediction, the judge's model and
settings, prompt) — see :mod:`video_env.cache`. A failing call or an unusable reply
raises :class:`JudgeError`; the environment records it in the episode record
(``judge_error``) and leaves the episode ungraded instead of crashing a run.
"""

from __future__ import annotations

import math
from functools import cache
from importlib import resources
from typing import Any

from video_env.backends.llm.base import LLM
from video_env.cache.store import CacheArg, cache_key, resolve_cache
from video_env.errors import BackendError
from video_env.metrics.judges import MAX_SCORE, Grade

#: Tokens the judge may generate (the verdict is a few tokens of JSON).
JUDGE_MAX_TOKENS = 64


class JudgeError(BackendError):
    """The judge could not grade an answer (call failed, or the reply was unusable)."""


@cache
def judge_prompts() -> tuple[str, str]:
    """The (system, user) templates, from package data."""
    folder = resources.files("video_env.metrics") / "prompts"
    return (
        (folder / "llm_judge_system.txt").read_text(encoding="utf-8").strip(),
        (folder / "llm_judge_user.txt").read_text(encoding="utf-8").strip(),
    )


def parse_verdict(text: str) -> Grade:
    """A :class:`Grade` from the judge's reply (FALCON-Bench's rules).

    ``pred`` must be ``yes`` or ``no`` (case-insensitive); ``score`` an integer (a float
    with an integral value is accepted; anything else scores 0, as the reference
    evaluation does), clipped to 0-5.

    Raises:
        JudgeError: If the reply holds no object with a yes/no ``pred``.
    """
    from video_env.backends.llm.json_reply import ReplyFormatError, parse_json_object

    try:
        reply = parse_json_object(text)
    except ReplyFormatError as exc:
        raise JudgeError(f"judge reply is not a JSON object: {text[:200]!r}") from exc
    verdict = str(reply.get("pred", "")).strip().lower()
    if verdict not in ("yes", "no"):
        raise JudgeError(f"judge reply has no yes/no 'pred': {text[:200]!r}")
    return Grade(verdict == "yes", _score(reply.get("score")))


def _score(value: Any) -> float:
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return 0.0
    if isinstance(value, (int, float)) and math.isfinite(value) and float(value).is_integer():
        return float(min(max(value, 0), MAX_SCORE))
    return 0.0


class LLMJudge:
    """FALCON-Bench's LLM judge through any :class:`~video_env.backends.llm.base.LLM`.

    Args:
        llm: The judge model (FALCON-Bench used ``openai:gpt-4o-mini``).
        cache: A :class:`~video_env.cache.store.DiskCache`, ``"shared"`` or ``None``.

    Attributes:
        failures: Grades that raised :class:`JudgeError` so far.
    """

    def __init__(self, llm: LLM, cache: CacheArg = "shared") -> None:
        self.llm = llm
        self.cache = resolve_cache(cache)
        self.name = f"llm-judge({llm.name})"
        self.failures = 0

    @property
    def config(self) -> dict[str, object]:
        """What changes a verdict: the judge model and its settings, the prompts."""
        describe = getattr(self.llm, "describe", None)
        settings = describe() if callable(describe) else {"name": self.llm.name}
        settings = {k: v for k, v in settings.items() if k not in ("timeout_s", "max_retries")}
        system, user = judge_prompts()
        return {"llm": settings, "system": system, "user": user, "temperature": 0.0}

    def grade(self, question: str, reference: str, prediction: str) -> Grade:
        """Grade ``prediction`` against ``reference`` (cached).

        Raises:
            JudgeError: If the LLM call fails or its reply has no verdict.
        """
        if not prediction.strip():
            return Grade(False, 0.0)
        parts = {"q": question, "ref": reference, "pred": prediction, "judge": self.config}
        key = cache_key("judge", parts)
        cached = self.cache.get(key) if self.cache is not None else None
        if isinstance(cached, Grade):
            return cached
        try:
            grade = parse_verdict(self._ask(question, reference, prediction))
        except JudgeError:
            self.failures += 1
            raise
        if self.cache is not None:
            self.cache.set(key, grade)
        return grade

    def _ask(self, question: str, reference: str, prediction: str) -> str:
        system, user = judge_prompts()
        messages = [
            {"role": "system", "content": system},
            {
                "role": "user",
                "content": user.format(
                    question=question, reference=reference, prediction=prediction
                ),
            },
        ]
        try:
            completion = self.llm.chat(
                messages, json=True, max_tokens=JUDGE_MAX_TOKENS, temperature=0.0
            )
        except BackendError as exc:
            raise JudgeError(f"judge call failed: {exc}") from exc
        return completion.text
