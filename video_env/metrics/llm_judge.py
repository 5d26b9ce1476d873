"""An LLM judge of open answers with FALCON-Bench's protocol.

FALCON-Bench (the FALCONEye release, lmms-eval task ``FALCONBench``, judge
``gpt-4o-mini`` at temperature 0) asks the judge for a yes/no verdict and an integer score
0-5 as a small dictionary (``{"pred": "yes", "score": 4}``); accuracy is the share of
``yes`` over *every* question, the score the mean score. The released
``lmms_eval/tasks/FALCONBench/utils.py`` (``parse_score``, ``parse_acc``, ``gpt_eval``)
takes ``int(score)`` (4.8 -> 4; a string that is not an integer scores 0), reads a
missing ``pred`` as ``no``, and counts a failed grading as ``no`` with score 0: those are
the defaults here (``score_rule="released"``, ``on_failure="no"``); ``score_rule=
"integer"`` scores a non-integral number 0, and ``on_failure="ungraded"`` leaves the
episode ungraded (out of the accuracy's denominator). Either way a failed grading is
recorded as a judge error in the episode record (``judge_error``, ``judge_errors``). Our
prompts (``metrics/prompts/llm_judge_*.txt``) follow that structure and ask for JSON; the
reply is parsed leniently (json-repair: single quotes, code fences, prose around it).

Verdicts are cached on disk by (question, reference, prediction, the judge's model and
settings, prompt) — see :mod:`video_env.cache`. A failing call or an unusable reply
raises :class:`JudgeError`; the environment records it in the episode record
(``judge_error``) and, with ``on_failure="ungraded"``, leaves the episode ungraded
instead of crashing a run.
"""

from __future__ import annotations

import math
from functools import cache
from importlib import resources
from typing import Any

from video_env.backends.llm.base import LLM
from video_env.cache.store import CacheArg, cache_key, resolve_cache
from video_env.errors import BackendError, ConfigError
from video_env.metrics.judges import MAX_SCORE, Grade

#: Tokens the judge may generate (the verdict is a few tokens of JSON).
JUDGE_MAX_TOKENS = 64
#: How a score is read: the released ``int(score)``, or integers only.
SCORE_RULES = ("released", "integer")
#: What a failed grading becomes: ``no`` with score 0 (released), or ungraded.
ON_FAILURE = ("no", "ungraded")


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


def parse_verdict(text: str, score_rule: str = "released") -> Grade:
    """A :class:`Grade` from the judge's reply (FALCON-Bench's rules).

    ``pred`` is ``yes`` or ``no`` (case-insensitive; a missing ``pred`` is ``no`` with
    ``score_rule="released"``, as ``parse_acc`` reads it). ``score``: with ``"released"``
    ``int(score)`` (4.8 -> 4, ``"4"`` -> 4, ``"4.8"`` -> 0); with ``"integer"`` only an
    integral value counts, anything else scores 0; clipped to 0-5.

    Raises:
        JudgeError: If the reply holds no object, or a ``pred`` other than yes/no (or
            none, with ``score_rule="integer"``).
    """
    from video_env.backends.llm.json_reply import ReplyFormatError, parse_json_object

    try:
        reply = parse_json_object(text)
    except ReplyFormatError as exc:
        raise JudgeError(f"judge reply is not a JSON object: {text[:200]!r}") from exc
    missing = "no" if score_rule == "released" else ""
    verdict = str(reply.get("pred", missing)).strip().lower()
    if verdict not in ("yes", "no"):
        raise JudgeError(f"judge reply has no yes/no 'pred': {text[:200]!r}")
    score = _released_score if score_rule == "released" else _integer_score
    return Grade(verdict == "yes", score(reply.get("score")))


def _released_score(value: Any) -> float:
    """``int(score)`` as the released ``parse_score``, 0 where ``int`` fails; clipped."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return float(min(max(number, 0), MAX_SCORE))


def _integer_score(value: Any) -> float:
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
        score_rule: ``"released"`` (``int(score)``) or ``"integer"`` (see
            :func:`parse_verdict`).
        on_failure: ``"no"`` (released: a failed grading is wrong with score 0, its
            error kept in :attr:`Grade.error`) or ``"ungraded"`` (raise
            :class:`JudgeError`; the episode stays ungraded).

    Attributes:
        failures: Gradings that failed so far (either ``on_failure``).

    Raises:
        ConfigError: For an unknown ``score_rule`` or ``on_failure``.
    """

    def __init__(
        self,
        llm: LLM,
        cache: CacheArg = "shared",
        score_rule: str = "released",
        on_failure: str = "no",
    ) -> None:
        if score_rule not in SCORE_RULES or on_failure not in ON_FAILURE:
            raise ConfigError(
                f"score_rule must be one of {SCORE_RULES}, on_failure one of {ON_FAILURE}"
            )
        self.score_rule, self.on_failure = score_rule, on_failure
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
        return {
            "llm": settings,
            "system": system,
            "user": user,
            "temperature": 0.0,
            "score_rule": self.score_rule,
        }

    def grade(self, question: str, reference: str, prediction: str) -> Grade:
        """Grade ``prediction`` against ``reference`` (cached).

        Raises:
            JudgeError: If the LLM call fails or its reply has no verdict, and
                ``on_failure="ungraded"`` (with ``"no"`` the grade is wrong, score 0,
                and carries the error).
        """
        if not prediction.strip():
            return Grade(False, 0.0)
        parts = {"q": question, "ref": reference, "pred": prediction, "judge": self.config}
        key = cache_key("judge", parts)
        cached = self.cache.get(key) if self.cache is not None else None
        if isinstance(cached, Grade):
            return cached
        try:
            grade = parse_verdict(self._ask(question, reference, prediction), self.score_rule)
        except JudgeError as exc:
            self.failures += 1
            if self.on_failure == "ungraded":
                raise
            return Grade(False, 0.0, error=str(exc))  # not cached: a later run may grade it
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
