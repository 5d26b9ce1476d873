"""A small parser for function-call style actions written by LLMs.

Grammar (case-insensitive names): ``name(arg, arg, ...)`` where an argument is a quoted
string, a number, a bracketed list, or bare text. Windows are written ``[12.5, 40]``,
``12.5-40``, ``12.5s to 40s`` or with clock times ``01:05-01:30`` / ``1:02:03-1:02:10``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from video_env.errors import InvalidActionError
from video_env.types import Interval, SampleError


class ActionParseError(InvalidActionError):
    """Text that is not a well-formed action."""


@dataclass(frozen=True)
class Call:
    """A function-call found in text."""

    name: str
    args: tuple[str, ...]
    start: int
    end: int


_OPEN = {"(": ")", "[": "]", "{": "}"}
_QUOTES = "\"'“”‘’"


def find_calls(text: str, names: tuple[str, ...]) -> list[Call]:
    """Every well-formed ``name(...)`` call in ``text``, in order."""
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\s*\(", re.IGNORECASE)
    calls = []
    for match in pattern.finditer(text):
        end = _closing(text, match.end() - 1)
        if end is None:
            continue
        inner = text[match.end() : end]
        calls.append(Call(match.group(1).lower(), split_args(inner), match.start(), end + 1))
    return calls


def _closing(text: str, open_at: int) -> int | None:
    """Index of the bracket closing the one at ``open_at`` (quotes respected)."""
    stack = [_OPEN[text[open_at]]]
    quote = ""
    for i in range(open_at + 1, len(text)):
        c = text[i]
        if quote:
            if c == quote or (quote in "“‘" and c in "”’"):
                quote = ""
            continue
        if c in _QUOTES and _is_string_start(text, i):
            quote = c
        elif c in _OPEN:
            stack.append(_OPEN[c])
        elif c in ")]}":
            if c != stack.pop():
                return None
            if not stack:
                return i
    return None


def _is_string_start(text: str, i: int) -> bool:
    """A quote opens a string unless it is an apostrophe inside a word ("don't")."""
    return not (text[i] in "'’" and i > 0 and text[i - 1].isalnum())


def split_args(inner: str) -> tuple[str, ...]:
    """Top-level comma-separated arguments (brackets and quotes respected)."""
    args, depth, quote, current = [], 0, "", []
    for i, c in enumerate(inner):
        if quote:
            current.append(c)
            if c == quote or (quote in "“‘" and c in "”’"):
                quote = ""
            continue
        if c in _QUOTES and _is_string_start(inner, i):
            quote = c
        elif c in _OPEN:
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            args.append("".join(current).strip())
            current = []
            continue
        current.append(c)
    tail = "".join(current).strip()
    if tail or args:
        args.append(tail)
    return tuple(args)


def unquote(arg: str) -> str:
    """A string argument without its quotes (bare text is kept as is)."""
    arg = arg.strip()
    if len(arg) >= 2 and arg[0] in _QUOTES and arg[-1] in _QUOTES:
        return arg[1:-1]
    return arg


def is_quoted(arg: str) -> bool:
    """Whether the argument is a quoted string."""
    arg = arg.strip()
    return len(arg) >= 2 and arg[0] in _QUOTES and arg[-1] in _QUOTES


_TIME = r"(\d+(?::\d{1,2}){0,2}(?:\.\d+)?)\s*(?:s|sec|secs|seconds)?"
_RANGE = re.compile(rf"^\s*[\[(]?\s*{_TIME}\s*(?:,|-|–|to)\s*{_TIME}\s*[\])]?\s*$", re.IGNORECASE)


def parse_time(text: str) -> float:
    """Seconds from ``"75"``, ``"75.5s"``, ``"01:15"`` or ``"1:01:15"``.

    Raises:
        ActionParseError: If the text is not a time.
    """
    match = re.fullmatch(_TIME, text.strip(), re.IGNORECASE)
    if not match:
        raise ActionParseError(f"not a time: {text!r}")
    value = 0.0
    for part in match.group(1).split(":"):
        value = value * 60 + float(part)
    return value


def parse_window(text: str) -> Interval:
    """A window from ``[a, b]``, ``a-b``, ``a to b`` (seconds or clock times).

    Raises:
        ActionParseError: If the text is not a window or the window is reversed.
    """
    match = _RANGE.match(text)
    if not match:
        raise ActionParseError(f"not a time window: {text!r} (write [start, end] in seconds)")
    start, end = parse_time(match.group(1)), parse_time(match.group(2))
    try:
        return Interval(start, end)
    except SampleError as exc:
        raise ActionParseError(f"bad window {text!r}: {exc}") from exc


def parse_int(text: str, what: str) -> int:
    """An integer argument.

    Raises:
        ActionParseError: If it is not an integer.
    """
    cleaned = unquote(text).strip().lower().removesuffix("x")
    if not re.fullmatch(r"[+-]?\d+", cleaned):
        raise ActionParseError(f"{what} must be an integer, got {text!r}")
    return int(cleaned)


def find_json_action(text: str) -> dict[str, object] | None:
    """The last JSON object in ``text`` that has an ``"action"`` key, if any."""
    found = None
    for match in re.finditer(r"\{", text):
        end = _closing(text, match.start())
        if end is None:
            continue
        try:
            value = json.loads(text[match.start() : end + 1])
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and "action" in value:
            found = value
    return found


def strip_fences(text: str) -> str:
    """Text without Markdown code fences."""
    return re.sub(r"```[a-zA-Z]*", "", text)
