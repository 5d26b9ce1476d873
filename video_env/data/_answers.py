"""MCQ answers from annotations (a letter, an index or the option's text) as option letters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from video_env.data._common import EMPTY_OPTION, RecordContext
from video_env.data._parsing import OPTION_PREFIX, brief, letter_of
from video_env.types import OPTION_LETTERS


def answer_letter(
    ctx: RecordContext,
    options: Sequence[str],
    answer: Any,
    index: int,
    kind: Literal["letter", "index", "text"] = "letter",
) -> str:
    """Normalise an MCQ answer to its option letter.

    Args:
        ctx: The file being parsed (for errors).
        options: The option texts.
        answer: The raw answer.
        index: Record index (for errors).
        kind: How the benchmark gives the answer: an option letter (``"B"``, ``"(B)"``),
            a zero-based index (``1``, ``"1"``) or the option text (matched exactly
            after stripping, then case-insensitively, then without an ``"A. "`` prefix;
            the first match wins).

    Raises:
        DatasetError: If the answer does not name one of the options, or names an empty
            one (:data:`EMPTY_OPTION`): a question whose right answer has no text cannot
            be asked.
    """
    letter = _find_answer(options, answer, kind)
    if letter is None:
        raise ctx.error(
            f"answer {brief(answer)} is not an option {kind} of {brief(list(options))}", index
        )
    if options[OPTION_LETTERS.index(letter)] == EMPTY_OPTION:
        raise ctx.error(f"the correct option {letter} is empty", index)
    return letter


def _find_answer(
    options: Sequence[str], answer: Any, kind: Literal["letter", "index", "text"]
) -> str | None:
    n = len(options)
    if kind == "letter" and isinstance(answer, str):
        letter = answer.strip().strip("()").rstrip(".").upper()
        if len(letter) == 1 and letter in OPTION_LETTERS[:n]:
            return letter
    elif kind == "index":
        if isinstance(answer, str) and answer.strip().isdigit():
            answer = int(answer)
        if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < n:
            return letter_of(answer)
    elif kind == "text" and isinstance(answer, (str, int, float)):
        stripped = [o.strip() for o in options]
        lowered = [o.lower() for o in stripped]
        key = str(answer).strip()
        prefix = OPTION_PREFIX.match(key)
        for text in (key, key[prefix.end() :].strip() if prefix else key):
            if text in stripped:
                return letter_of(stripped.index(text))
            if text.lower() in lowered:
                return letter_of(lowered.index(text.lower()))
    return None
