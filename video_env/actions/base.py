"""Text action sets: turn an LLM's reply into a structured action, and document them."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Generic, TypeVar

from video_env.actions.parsing import (
    ActionParseError,
    Call,
    find_calls,
    find_json_action,
    is_quoted,
    parse_window,
    strip_fences,
    unquote,
)
from video_env.actions.types import AnswerAction
from video_env.types import Interval

A = TypeVar("A")


class ActionSet(abc.ABC, Generic[A]):
    """Parses text into one environment's actions.

    ``parse(text, strict=True)`` accepts exactly one well-formed call and nothing else.
    ``parse(text)`` (lenient) ignores prose and code fences around the calls, takes the last
    call (all ``query`` calls for ClipQuery), and falls back to a JSON object with an
    ``"action"`` key. Both raise :class:`ActionParseError` with a message meant to be shown
    to the model.
    """

    #: Call names this action set understands.
    names: tuple[str, ...] = ()

    @abc.abstractmethod
    def describe(self) -> str:
        """Documentation of the actions, for a prompt."""

    @abc.abstractmethod
    def example(self) -> str:
        """One valid action in text form."""

    def parse(self, text: str, strict: bool = False) -> A:
        """Parse ``text`` into an action.

        Raises:
            ActionParseError: If no valid action can be read.
        """
        if not isinstance(text, str):
            raise TypeError(f"actions are parsed from str, got {type(text).__name__}")
        if strict:
            return self._from_calls(self._strict_calls(text.strip()), strict=True)
        cleaned = strip_fences(text)
        calls = find_calls(cleaned, self.names)
        if calls:
            return self._from_calls(self._pick(calls), strict=False)
        record = find_json_action(cleaned)
        if record is not None:
            return self._from_json(record)
        raise ActionParseError(f"no action found; expected one of: {self.example()}")

    def _strict_calls(self, text: str) -> list[Call]:
        calls = find_calls(text, self.names)
        bounds = [0] + [x for c in calls for x in (c.start, c.end)] + [len(text)]
        rest = "".join(text[a:b] for a, b in zip(bounds[::2], bounds[1::2], strict=True))
        if not calls or rest.strip(" \n;"):
            raise ActionParseError(
                f"strict mode: the reply must be exactly one action such as {self.example()}"
            )
        return calls

    def _pick(self, calls: list[Call]) -> list[Call]:
        """Which calls make the action (default: the last one)."""
        return [calls[-1]]

    @abc.abstractmethod
    def _from_calls(self, calls: list[Call], strict: bool) -> A:
        """Build the action from parsed calls."""

    @abc.abstractmethod
    def _from_json(self, record: Mapping[str, object]) -> A:
        """Build the action from a JSON object."""


def parse_answer(call: Call, strict: bool, memory: str | None = None) -> AnswerAction:
    """``answer(text[, window])``.

    Raises:
        ActionParseError: If the answer is empty or the window malformed.
    """
    args = call.args
    if not args or not unquote(args[0]).strip():
        raise ActionParseError('answer needs a text: answer("B", [120, 135])')
    text, window = unquote(args[0]).strip(), None
    if len(args) > 2 and strict:
        raise ActionParseError("answer takes the text and an optional [start, end] window")
    if len(args) >= 2:
        try:  # answer(B, [10, 20]) or, leniently, answer(B, 10, 20)
            window = parse_window(", ".join(args[1:]))
        except ActionParseError:
            if strict or is_quoted(args[0]):
                raise
            text = ", ".join(args)  # bare text with commas and no window
    return AnswerAction(text, window, memory)


def answer_from_json(record: Mapping[str, object], memory: str | None = None) -> AnswerAction:
    """``{"action": "answer", "answer" | "text": ..., "window": [s, e]}``."""
    text = record.get("answer", record.get("text"))
    if not isinstance(text, (str, int, float)) or not str(text).strip():
        raise ActionParseError('JSON answer needs "answer": "<text>"')
    return AnswerAction(str(text).strip(), json_window(record.get("window")), memory)


def json_window(value: object) -> Interval | None:
    """A window from JSON (``[s, e]`` or ``"s-e"``), or ``None``."""
    if value is None:
        return None
    if isinstance(value, str):
        return parse_window(value)
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return parse_window(f"[{value[0]}, {value[1]}]")
    raise ActionParseError(f"a window is [start, end] in seconds, got {value!r}")
