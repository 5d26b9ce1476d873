"""Pure text parsing shared by the loaders: timestamps, option letters, question forms.

Also the short form of an annotation value that their messages quote (:func:`brief`).
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Sequence
from typing import Any

from video_env.errors import ConfigError
from video_env.types import OPTION_LETTERS

_BRIEF = reprlib.Repr()
_BRIEF.maxstring = _BRIEF.maxother = 80


def brief(value: Any) -> str:
    """A short ``repr`` of an annotation value for messages (bounded length and depth)."""
    return _BRIEF.repr(value)


_TIMESTAMP = re.compile(r"^\s*(?:(\d+):)?(\d+):(\d{1,2}(?:\.\d+)?)\s*$")
#: An option label at the start of a text: ``"A. "``, ``"(A) "``, ``"A) "``, ``"A: "``.
OPTION_PREFIX = re.compile(r"^\s*\(?([A-Z])\s*[.):：]\s*")


def parse_timestamp(text: str) -> float:
    """Seconds from ``MM:SS`` or ``H:MM:SS`` (fractional seconds allowed).

    Without hours the minutes may exceed 59 (``"75:10"``).

    Raises:
        ValueError: If the text is not a timestamp.
    """
    match = _TIMESTAMP.match(text)
    if match is None:
        raise ValueError(f"not a [H:]MM:SS timestamp: {text!r}")
    hours, minutes, seconds = match.groups()
    if float(seconds) >= 60 or (hours is not None and int(minutes) >= 60):
        raise ValueError(f"not a [H:]MM:SS timestamp: {text!r}")
    return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)


def parse_time_range(text: str) -> tuple[float, float]:
    """``(start, end)`` seconds from ``"MM:SS-MM:SS"`` (or ``H:MM:SS`` bounds).

    Raises:
        ValueError: If the text is not two timestamps joined by a dash.
    """
    parts = [p for p in re.split(r"\s*[-–~]\s*", text.strip()) if p]
    if len(parts) != 2:
        raise ValueError(f"not a time range 'MM:SS-MM:SS': {text!r}")
    return parse_timestamp(parts[0]), parse_timestamp(parts[1])


def strip_option_letters(options: Sequence[str]) -> tuple[str, ...]:
    """Remove ``"A. "`` / ``"(A) "`` / ``"A) "`` prefixes when every option has its own letter.

    Options are left unchanged unless option ``i`` starts with letter ``i`` for all ``i``.
    """
    matches = [OPTION_PREFIX.match(o) for o in options]
    lettered = len(options) <= len(OPTION_LETTERS)
    if lettered and all(
        m is not None and m.group(1) == letter_of(i) for i, m in enumerate(matches)
    ):
        return tuple(
            o[m.end() :].strip() for o, m in zip(options, matches, strict=True) if m is not None
        )
    return tuple(o.strip() for o in options)


def letter_of(index: int) -> str:
    """Option letter of a zero-based index.

    Raises:
        ValueError: If no letter has that index (an MCQ has at most 26 options).
    """
    if not 0 <= index < len(OPTION_LETTERS):
        raise ValueError(
            f"no option letter for index {index}: at most {len(OPTION_LETTERS)} options"
        )
    return OPTION_LETTERS[index]


#: Question forms of benchmarks that have both (FALCON-Bench, CG-Bench).
FORMS = ("mcq", "open")


def parse_form(form: str) -> tuple[str, ...]:
    """The forms to emit for ``form="mcq" | "open" | "both"``.

    Raises:
        ConfigError: For any other value.
    """
    if form == "both":
        return FORMS
    if form in FORMS:
        return (form,)
    raise ConfigError(f"form must be 'mcq', 'open' or 'both', got {form!r}")
