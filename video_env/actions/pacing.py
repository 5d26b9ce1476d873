"""Text actions of the Pacing env, including VideoScout's Think-Act format."""

from __future__ import annotations

import re
from collections.abc import Mapping

from video_env.actions.base import ActionSet, answer_from_json, parse_answer
from video_env.actions.parsing import ActionParseError, Call, parse_int
from video_env.actions.types import AnswerAction, RewatchAction, SpeedAction

PacingAction = SpeedAction | RewatchAction | AnswerAction

_TAG = r"<{0}>(.*?)</{0}>"
_THINK_ACT = re.compile(
    r"^\s*(?:<think>.*?</think>\s*)?(?:<memory>(?P<memory>.*?)</memory>\s*)?"
    r"<action>(?P<action>.*?)</action>\s*$",
    re.DOTALL | re.IGNORECASE,
)
SPEEDS = (1, 2, 4)


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
        """Parse a reply, with or without the Think-Act tags (see :class:`ActionSet`)."""
        if not isinstance(text, str):
            raise TypeError(f"actions are parsed from str, got {type(text).__name__}")
        match = _THINK_ACT.match(text)
        if match is None:
            if strict and "<action>" in text.lower():
                raise ActionParseError(
                    "malformed Think-Act reply: use <think>...</think><memory>...</memory>"
                    "<action>...</action>"
                )
            return super().parse(text, strict)
        memory = match.group("memory")
        action = super().parse(match.group("action"), strict)
        if memory is None:
            return action
        memory = memory.strip()
        if isinstance(action, SpeedAction):
            return SpeedAction(action.factor, memory)
        if isinstance(action, RewatchAction):
            return RewatchAction(action.chunk, memory)
        return AnswerAction(action.text, action.window, memory)

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


def _speed(value: int) -> int:
    if value not in SPEEDS:
        raise ActionParseError(f"speed must be 1x, 2x or 4x, got {value}x")
    return value
