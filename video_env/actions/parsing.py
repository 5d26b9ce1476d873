"""A small parser for function-call style actions written by LLMs.

Grammar (case-insensitive names): ``name(arg, arg, ...)`` where an argument is a quoted
string, a number, a bracketed list, or bare text. Windows are written ``[12.5, 40]``,
``12.5-40``, ``12.5s to 40s`` or with clock times ``01:05-01:30`` / ``1:02:03-1:02:10``.

Every function here runs in time linear in the length of its input: replies come from
models and may be adversarial (thousands of unclosed brackets, megabytes of text). The
scanners make one left-to-right pass and never re-scan text per opening bracket; regular
expressions that could backtrack only ever see bounded text (numbers and windows).
"""

from __future__ import annotations

import bisect
import functools
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
#: The characters that end a string opened by each quote (as models write them).
_STRING_END = {
    q: re.compile("[" + closers + "]")
    for q, closers in {'"': '"', "'": "'", "“": "“”’", "‘": "‘”’", "”": "”", "’": "’"}.items()
}
#: Longest argument read as a number (digits and sign).
MAX_NUMBER_CHARS = 18
#: Longest argument read as a time or a time window.
MAX_WINDOW_CHARS = 100
#: Deepest bracket nesting inside a call; a deeper call is not well-formed.
MAX_CALL_DEPTH = 64
#: Deepest ``{``/``[`` nesting searched for a JSON action.
MAX_JSON_DEPTH = 32


@functools.lru_cache(maxsize=32)
def _call_patterns(names: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """``name(`` openings alone (prose), and with brackets and quotes (inside calls).

    Runs of one opening bracket are one token, so that a megabyte of ``(`` costs a few
    steps, not a million.
    """
    opening = rf"\b(?:{'|'.join(map(re.escape, names))})\s*\("
    inside = rf"(?P<call>{opening})|(?P<close>[)\]}}])|(?P<open>\(+|\[+|\{{+)|(?P<quote>[\"'“”‘’])"
    return re.compile(opening, re.I), re.compile(inside, re.I)


def find_calls(text: str, names: tuple[str, ...]) -> list[Call]:
    """Every well-formed outermost ``name(...)`` call in ``text``, in order.

    One pass over the text. Outside calls, prose (its quotes and brackets included) is
    ignored. Inside a call, brackets nest and quoted strings hide brackets and names. A
    call whose brackets do not close, close with the wrong bracket, nest deeper than
    :data:`MAX_CALL_DEPTH`, or that holds a string that never ends is dropped, together
    with the calls it is nested in, and scanning goes on after the point where it failed.
    A call nested in the arguments of a call that closes is part of that argument; nested
    in one that fails, it counts on its own.
    """
    if not names:
        return []
    in_prose, in_call = _call_patterns(tuple(names))
    found: list[Call] = []
    stack: list[tuple[str, int]] = []  # (expected closer, index into `open_calls` or -1)
    open_calls: list[tuple[str, int, int, list[Call]]] = []  # name, start, "(" at, nested
    unterminated: set[str] = set()  # quote kinds that have no end after some earlier point

    def drop_open_calls() -> None:
        for *_, nested in open_calls:
            found.extend(nested)
        stack.clear()
        open_calls.clear()

    pos = 0
    while (match := (in_call if stack else in_prose).search(text, pos)) is not None:
        pos = match.end()
        kind = match.lastgroup if stack else "call"
        if kind == "close":
            if match.group() != stack[-1][0]:
                drop_open_calls()
            elif stack.pop()[1] >= 0:
                name, start, open_at, _nested = open_calls.pop()
                i = pos - 1
                call = Call(name, split_args(text[open_at + 1 : i]), start, pos)
                (open_calls[-1][3] if open_calls else found).append(call)
        elif kind == "open":
            token = match.group()
            stack.extend([(_OPEN[token[0]], -1)] * len(token))
            if len(stack) > MAX_CALL_DEPTH:
                drop_open_calls()
        elif kind == "call":
            name = match.group().split("(")[0].rstrip().lower()
            stack.append((")", len(open_calls)))
            open_calls.append((name, match.start(), pos - 1, []))
            if len(stack) > MAX_CALL_DEPTH:
                drop_open_calls()
        else:  # a quote
            i, quote = match.start(), match.group()
            if not _is_string_start(text, i):
                continue
            end = None if quote in unterminated else _STRING_END[quote].search(text, i + 1)
            if end is None:
                unterminated.add(quote)
                drop_open_calls()
            else:
                pos = end.end()
    drop_open_calls()
    found.sort(key=lambda call: call.start)
    return found


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


def _shown(text: str) -> str:
    """``text`` for an error message (long text cut)."""
    return repr(text if len(text) <= 60 else text[:57] + "...")


def parse_time(text: str) -> float:
    """Seconds from ``"75"``, ``"75.5s"``, ``"01:15"`` or ``"1:01:15"``.

    Raises:
        ActionParseError: If the text is not a time.
    """
    text = text.strip()
    match = re.fullmatch(_TIME, text, re.IGNORECASE) if len(text) <= MAX_WINDOW_CHARS else None
    if not match:
        raise ActionParseError(f"not a time: {_shown(text)}")
    value = 0.0
    for part in match.group(1).split(":"):
        value = value * 60 + float(part)
    return value


def window_bounds(text: str) -> tuple[float, float] | None:
    """The start and end written in a window (``[a, b]``, ``a-b``, ``a to b``), unchecked.

    ``None`` when the text is not a window; a reversed window keeps its order.
    """
    match = _RANGE.match(text) if len(text) <= MAX_WINDOW_CHARS else None
    return (parse_time(match.group(1)), parse_time(match.group(2))) if match else None


def parse_window(text: str) -> Interval:
    """A window from ``[a, b]``, ``a-b``, ``a to b`` (seconds or clock times).

    Raises:
        ActionParseError: If the text is not a window or the window is reversed.
    """
    bounds = window_bounds(text)
    if bounds is None:
        raise ActionParseError(f"not a time window: {_shown(text)} (write [start, end] in seconds)")
    start, end = bounds
    try:
        return Interval(start, end)
    except SampleError as exc:
        raise ActionParseError(f"bad window {_shown(text)}: {exc}") from exc


def parse_int(text: str, what: str) -> int:
    """An integer argument (at most :data:`MAX_NUMBER_CHARS` characters).

    Raises:
        ActionParseError: If it is not an integer, or too long to be a useful one.
    """
    cleaned = unquote(text).strip().lower().removesuffix("x")
    if len(cleaned) > MAX_NUMBER_CHARS or not re.fullmatch(r"[+-]?\d+", cleaned):
        raise ActionParseError(f"{what} must be a (small) integer, got {_shown(text)}")
    return int(cleaned)


def find_json_action(text: str, key: str = "action") -> dict[str, object] | None:
    """The last JSON object in ``text`` that has a ``key`` key (``"action"``), if any.

    One pass finds the balanced ``{...}`` spans (JSON strings respected, at most
    :data:`MAX_JSON_DEPTH` deep). In text order, a span that contains ``"key"`` and
    does not lie inside an already decoded span is decoded; a decoded value is searched
    for nested objects, a span that is not JSON gives way to the spans inside it.
    """
    quoted = json.dumps(key)
    if quoted not in text:
        return None
    keys = [m.start() for m in re.finditer(re.escape(quoted), text)]
    found: list[dict[str, object]] = []
    decoded_until = 0
    for start, end in _json_spans(text):
        if end < 0 or start < decoded_until:
            continue
        at = bisect.bisect_left(keys, start)
        if at == len(keys) or keys[at] >= end:
            continue  # no key inside
        try:
            value = json.loads(text[start:end])
        except (json.JSONDecodeError, RecursionError):
            continue
        decoded_until = end
        _walk_json(value, key, MAX_JSON_DEPTH, found)
    return found[-1] if found else None


def _walk_json(value: object, key: str, depth: int, found: list[dict[str, object]]) -> None:
    """Append ``value`` or the dicts nested in it that have a ``key`` key."""
    if depth <= 0:
        return
    if isinstance(value, dict):
        if key in value:
            found.append(value)
            return
        children: list[object] = list(value.values())
    elif isinstance(value, list):
        children = list(value)
    else:
        return
    for child in children:
        _walk_json(child, key, depth - 1, found)


_JSON_TOKENS = re.compile(r'\{+|\[+|[}\]"]')


def _json_spans(text: str) -> list[tuple[int, int]]:
    """The balanced ``{...}`` spans of ``text``, in the order they open.

    Strings follow JSON (double quotes, backslash escapes). Brackets nested deeper than
    :data:`MAX_JSON_DEPTH`, a wrong closing bracket or a string that never ends abandon
    the objects open at that point.
    """
    spans: list[tuple[int, int]] = []  # (start, end); end is -1 while open or abandoned
    stack: list[tuple[str, int]] = []  # (expected closer, index into spans or -1)
    pos, unterminated = 0, False
    while True:
        if not stack:  # prose: only an opening brace matters
            pos = text.find("{", pos)
            if pos < 0:
                break
        match = _JSON_TOKENS.search(text, pos)
        if match is None:
            break
        i, token = match.start(), match.group()
        pos = match.end()
        if token[0] in "{[":
            if len(stack) + len(token) > MAX_JSON_DEPTH:
                stack.clear()
            elif token[0] == "[":
                stack.extend([("]", -1)] * len(token))
            else:
                stack.extend(("}", len(spans) + k) for k in range(len(token)))
                spans.extend((i + k, -1) for k in range(len(token)))
        elif token == '"':
            close = None if unterminated else _json_string_end(text, i + 1)
            if close is None:
                unterminated = True
                stack.clear()
            else:
                pos = close + 1
        elif token != stack[-1][0]:
            stack.clear()
        else:
            index = stack.pop()[1]
            if index >= 0:
                spans[index] = (spans[index][0], i + 1)
    return spans


def _json_string_end(text: str, pos: int) -> int | None:
    """Index of the quote ending a JSON string whose text starts at ``pos``."""
    while (close := text.find('"', pos)) >= 0:
        backslashes = 0
        while close - backslashes - 1 >= pos and text[close - backslashes - 1] == "\\":
            backslashes += 1
        if backslashes % 2 == 0:
            return close
        pos = close + 1
    return None


def strip_fences(text: str) -> str:
    """Text without Markdown code fences."""
    return re.sub(r"```[a-zA-Z]*", "", text)
