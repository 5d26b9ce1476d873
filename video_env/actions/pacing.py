"""Text actions of the Pacing env, including VideoScout's Think-Act format."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from video_env.actions.base import ActionSet, answer_from_json, parse_answer
from video_env.actions.parsing import ActionParseError, Call, parse_int
from video_env.actions.types import AnswerAction, RewatchAction, SpeedAction

PacingAction = SpeedAction | RewatchAction | AnswerAction

_WHITESPACE = re.compile(r"\s*")
_TAGS = {t: (re.compile(f"<{t}>", re.I), re.compile(f"</{t}>", re.I)) for t in ("think", "memory")}
_ACTION = re.compile("<action>", re.I)
SPEEDS = (1, 2, 4)


@dataclass(frozen=True)
class ThinkAct:
    """The parts of a Think-Act reply (``None`` for a missing tag)."""

    think: str | None
    memory: str | None
    action: str


def split_think_act(text: str) -> ThinkAct | None:
    """``<think>...</think><memory>...</memory><action>...</action>`` split into parts.

    Tags are case-insensitive; ``think`` and ``memory`` are optional and each ends at its
    first closing tag; ``action`` ends at the last ``</action>``, which only whitespace may
    follow. Linear in the length of ``text``.

    Returns:
        The parts, or ``None`` if the text is not in this form.
    """
    pos = _WHITESPACE.match(text).end()  # type: ignore[union-attr]
    parts: dict[str, str | None] = {"think": None, "memory": None}
    for tag, (opening, closing) in _TAGS.items():
        if opening.match(text, pos):
            close = closing.search(text, pos)
            if close is None:
                return None
            parts[tag] = text[pos + len(tag) + 2 : close.start()]
            pos = _WHITESPACE.match(text, close.end()).end()  # type: ignore[union-attr]
    body = text.rstrip()
    start, end = pos + len("<action>"), len(body) - len("</action>")
    if not _ACTION.match(text, pos) or end < start or body[end:].lower() != "</action>":
        return None
    return ThinkAct(parts["think"], parts["memory"], text[start:end])


class PacingActionSet(ActionSet[PacingAction]):
    """``speed(1x|2x|4x)``, ``rewatch(k)``, ``answer("text", [start, end])``.

    Accepts VideoScout's Think-Act replies
    ``<think>...</think><memory>...</memory><action>...</action>``: the memory tag becomes
    the action's memory (a whole rewrite of the agent's notes).
    """

    names = ("speed", "rewatch", "answer")

    def describe(self) -> str:
        """Documentation of the actions, for a prompt."""
        return (
            "Reply as <think>your reasoning</think><memory>your updated notes</memory>"
            "<action>ACTION</action>, where ACTION is one of:\n"
            "- speed(1x) | speed(2x) | speed(4x): watch the next 1, 2 or 4 chunks "
            "(more chunks per turn means fewer, smaller frames per chunk).\n"
            "- rewatch(k): watch chunk number k again, alone at 1x; k is the chunk's number "
            "as shown (it must be in the current window, which must span several chunks).\n"
            '- answer("your answer", [start, end]): answer (the option letter for a '
            "multiple-choice question) and give the window in seconds where the evidence is.\n"
            "The memory replaces your previous notes entirely; keep it within the word budget."
        )

    def example(self) -> str:
        """One valid action."""
        return (
            "<think>Nothing yet.</think><memory>No clue so far.</memory><action>speed(2x)</action>"
        )

    def parse(self, text: str, strict: bool = False) -> PacingAction:
        """Parse a reply, with or without the Think-Act tags (see :class:`ActionSet`).

        The action's ``well_formed`` is true only for a complete Think-Act reply: think,
        memory and action tags, each closed, and an action of exactly one call. Anything
        read more leniently (no tags, prose, several calls, JSON) is still an action, but
        not a well-formed one (VideoScout's ``r_fmt`` is not paid for it).
        """
        if not isinstance(text, str):
            raise TypeError(f"actions are parsed from str, got {type(text).__name__}")
        parts = split_think_act(text)
        if parts is None:
            if strict and "<action>" in text.lower():
                raise ActionParseError(
                    "malformed Think-Act reply: use <think>...</think><memory>...</memory>"
                    "<action>...</action>"
                )
            return _with(super().parse(text, strict), None, well_formed=False)
        try:
            action = super().parse(parts.action, strict=True)
            exact = True
        except ActionParseError:
            if strict:
                raise
            action, exact = super().parse(parts.action), False
        well_formed = exact and parts.think is not None and parts.memory is not None
        memory = parts.memory.strip() if parts.memory is not None else None
        return _with(action, memory, well_formed)

    def _from_calls(self, calls: list[Call], strict: bool) -> PacingAction:
        if strict and len(calls) != 1:
            raise ActionParseError("give exactly one action")
        call = calls[-1]
        if call.name == "answer":
            return parse_answer(call, strict)
        if len(call.args) != 1:
            raise ActionParseError(f"{call.name} takes one argument, e.g. {call.name}(2)")
        value = parse_int(call.args[0], "the " + ("speed" if call.name == "speed" else "chunk"))
        if call.name == "speed":
            return SpeedAction(_speed(value))
        return RewatchAction(value)

    def _from_json(self, record: Mapping[str, object]) -> PacingAction:
        kind = str(record.get("action", "")).lower()
        memory = record.get("memory")
        memory = str(memory) if memory is not None else None
        if kind == "answer":
            return answer_from_json(record, memory)
        if kind == "speed":
            return SpeedAction(_speed(parse_int(str(record.get("speed", "")), "the speed")), memory)
        if kind == "rewatch":
            return RewatchAction(parse_int(str(record.get("chunk", "")), "the chunk"), memory)
        raise ActionParseError(f"unknown action {kind!r}; use speed, rewatch or answer")


def _with(action: PacingAction, memory: str | None, well_formed: bool) -> PacingAction:
    """``action`` with ``memory`` (unless ``None``) and the ``well_formed`` flag."""
    if memory is None:
        return replace(action, well_formed=well_formed)
    return replace(action, memory=memory, well_formed=well_formed)


def _speed(value: int) -> int:
    if value not in SPEEDS:
        raise ActionParseError(f"speed must be 1x, 2x or 4x, got {value}x")
    return value
