"""A VLM's confidence in its answer, from the probabilities of the tokens it generated.

The default rule, ``"falconeye"``, is the one FALCONEye's released code applies
(``get_confidence_from_outputs`` in ``lmms_eval/models/meta_architecture/falcon_eye.py``
of ``cplou99/FALCONEye``, fed by the ``qwen2_5_vl`` model's ``inference``):

* **Which tokens count.** Every token the model generated, each decoded on its own with
  special tokens kept. Locally that includes the end token (``<|im_end|>`` for Qwen) when
  generation stopped on it rather than on the token cap; no prompt token counts; a
  whitespace or newline token counts like any other. Servers report the tokens they
  report: OpenAI's API leaves the end token out.
* **The probability of a token** is the top-1 probability of its step: the largest
  softmax probability of the step's scores (the logits after the generation processors,
  e.g. a checkpoint's repetition penalty — the reference reads ``output_scores``). Under
  greedy decoding this is the generated token's probability.
* **Open questions**: the geometric mean of those probabilities, ``(Π p_i)^(1/n)``.
* **MCQs**: the tokens whose decoded text *equals* one of the option letters (``"A"``;
  ``" A"`` with a space or ``"A."`` as one token do not count); if exactly one token
  matches and at most 5 tokens were generated (end token included), the confidence is
  that token's probability; otherwise (no letter, several, or a longer reply) it is 0.
  The reference reads the letters from the question text (``"(A)"`` or ``"A."``); here
  they are the letters of the sample's options (``A`` … up to their number).
* The result is rounded to 3 decimals, as the reference does before comparing it with
  its thresholds (0.8 open, 0.9 MCQ).

The alternatives the FALCONEye paper compares, for calibration studies:
``"sequence"`` (sequence likelihood: the product of the generated tokens' probabilities),
``"mean"`` (arithmetic mean of the top-1 probabilities) and ``"verbal"`` (the model
states its confidence in words; see :func:`verbal_instruction` and
:func:`parse_verbal_confidence`). They apply to open and MCQ answers alike, over the
same tokens, unrounded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from video_env.errors import ConfigError
from video_env.types import OPTION_LETTERS

__all__ = [
    "CONFIDENCE_RULES",
    "MCQ_MAX_TOKENS",
    "ConfidenceRule",
    "TokenProb",
    "check_rule",
    "checked_logprob",
    "confidence",
    "falconeye_confidence",
    "option_letters",
    "parse_verbal_confidence",
    "verbal_instruction",
]

ConfidenceRule = Literal["falconeye", "sequence", "mean", "verbal"]
CONFIDENCE_RULES: tuple[str, ...] = get_args(ConfidenceRule)

#: The reference sets an MCQ's confidence to 0 when more tokens than this were generated.
MCQ_MAX_TOKENS = 5
#: Decimals the reference rounds the FALCONEye confidence to.
FALCONEYE_DECIMALS = 3
#: How far above 0 a reported log-probability may be and still count as rounding (read
#: as 0); float32 log-softmax rounding stays far below it.
LOGPROB_ROUNDING = 1e-4


@dataclass(frozen=True)
class TokenProb:
    """One generated token and its probabilities.

    Attributes:
        text: The token decoded on its own, special tokens kept (``"<|im_end|>"``).
        top1: The largest probability of its step.
        chosen: The probability of this token (equal to ``top1`` under greedy decoding).
    """

    text: str
    top1: float
    chosen: float


def check_rule(rule: str) -> ConfidenceRule:
    """``rule`` if it is a known confidence rule, else :class:`ConfigError`."""
    if rule not in CONFIDENCE_RULES:
        raise ConfigError(f"unknown confidence rule {rule!r}; known: {', '.join(CONFIDENCE_RULES)}")
    return rule  # type: ignore[return-value]


def option_letters(options: Sequence[str] | None) -> tuple[str, ...]:
    """The letters of ``options`` (``A``, ``B``, …), empty for an open question."""
    if not options:
        return ()
    if len(options) > len(OPTION_LETTERS):
        raise ConfigError(f"at most {len(OPTION_LETTERS)} options are supported")
    return tuple(OPTION_LETTERS[: len(options)])


def falconeye_confidence(tokens: Sequence[TokenProb], letters: Sequence[str] = ()) -> float:
    """FALCONEye's confidence (see the module docstring for the exact rule).

    Args:
        tokens: The generated tokens, in order.
        letters: The option letters of an MCQ; empty for an open question.

    Returns:
        The confidence in ``[0, 1]``, rounded to 3 decimals; 0 when nothing was generated.
    """
    if not tokens:
        return 0.0
    if letters:
        matches = [t for t in tokens if t.text in letters]
        if len(matches) != 1 or len(tokens) > MCQ_MAX_TOKENS:
            return 0.0
        return round(matches[0].top1, FALCONEYE_DECIMALS)
    return round(_geometric_mean([t.top1 for t in tokens]), FALCONEYE_DECIMALS)


def confidence(
    rule: ConfidenceRule,
    tokens: Sequence[TokenProb],
    letters: Sequence[str] = (),
    stated: float | None = None,
) -> float:
    """The confidence of an answer under ``rule``.

    Args:
        rule: ``"falconeye"``, ``"sequence"``, ``"mean"`` or ``"verbal"``.
        tokens: The generated tokens.
        letters: Option letters of an MCQ (used by ``"falconeye"``).
        stated: The confidence the model stated (``"verbal"``; None counts as 0).

    Returns:
        A confidence in ``[0, 1]``.
    """
    if rule == "falconeye":
        return falconeye_confidence(tokens, letters)
    if rule == "verbal":
        return 0.0 if stated is None else min(max(stated, 0.0), 1.0)
    if not tokens:
        return 0.0
    if rule == "sequence":
        return math.exp(sum(_log(t.chosen) for t in tokens))
    return sum(t.top1 for t in tokens) / len(tokens)


def checked_logprob(value: object) -> float:
    """A token's log-probability as a server reported it, checked.

    A log-probability is at most 0. Rounding in a server's log-softmax can leave one a
    hair above (up to :data:`LOGPROB_ROUNDING`): that is read as 0. Anything larger, or
    not a finite number, is no log-probability: read as 0 it would give the token a
    probability of 1 and the answer full confidence, so it is refused.

    Raises:
        ValueError: If ``value`` is not a finite number at most :data:`LOGPROB_ROUNDING`.
        TypeError: If it is not a number at all.
    """
    if isinstance(value, (bool, str, bytes)):
        raise TypeError(f"a log-probability must be a number, got {type(value).__name__}")
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number):
        raise ValueError(f"a log-probability that is not finite ({number})")
    if number > LOGPROB_ROUNDING:
        raise ValueError(f"a positive log-probability ({number:g}), which no probability has")
    return min(number, 0.0)


def _log(p: float) -> float:
    return math.log(p) if p > 0 else -math.inf


def _geometric_mean(probs: Sequence[float]) -> float:
    return float(math.prod(probs) ** (1 / len(probs)))  # the reference's formula


_VERBAL = (
    "After your answer, on a new line, write 'Confidence: N' where N (0 to 100) is how "
    "sure you are that the answer is correct."
)
_VERBAL_PATTERN = re.compile(r"\n?\s*confidence\s*[:=]\s*(\d+(?:\.\d+)?)\s*(%?)\s*$", re.I)


def verbal_instruction() -> str:
    """The sentence appended to the question when the rule is ``"verbal"``."""
    return _VERBAL


def parse_verbal_confidence(text: str) -> tuple[str, float | None]:
    """Split ``"answer<newline>Confidence: 85"`` into ``("answer", 0.85)``.

    Values above 1 are read as percentages. Returns ``(text, None)`` when the reply
    states no confidence.
    """
    match = _VERBAL_PATTERN.search(text)
    if match is None:
        return text.strip(), None
    value = float(match.group(1))
    if match.group(2) or value > 1:
        value /= 100
    return text[: match.start()].strip(), min(value, 1.0)
