"""Text actions of the Zoom env (FALCONEye)."""

from __future__ import annotations

from collections.abc import Mapping

from video_env.actions.base import ActionSet, answer_from_json, json_window, parse_answer
from video_env.actions.parsing import ActionParseError, Call, parse_window
from video_env.actions.types import AnswerAction, EvaluateAction

ZoomAction = EvaluateAction | AnswerAction


class ZoomActionSet(ActionSet[ZoomAction]):
    """``evaluate([s, e], [s, e], ...)`` and ``answer("text", [s, e])``."""

    names = ("evaluate", "answer")

    def describe(self) -> str:
        """Documentation of the actions, for a prompt."""
        return (
            "Actions:\n"
            "- evaluate([start, end], ...): ask the vision model the question on each window "
            "(seconds); shorter windows are seen with more frames per second at higher "
            "resolution. Each window costs one evaluation of the budget.\n"
            '- answer("your answer", [start, end]): final answer and the window of its evidence.'
        )

    def example(self) -> str:
        """One valid action."""
        return "evaluate([60, 120], [300, 360])"

    def _from_calls(self, calls: list[Call], strict: bool) -> ZoomAction:
        if strict and len(calls) != 1:
            raise ActionParseError("give exactly one action")
        call = calls[-1]
        if call.name == "answer":
            return parse_answer(call, strict)
        if not call.args or not call.args[0]:
            raise ActionParseError("evaluate needs at least one [start, end] window")
        return EvaluateAction(_windows(call.args))

    def _from_json(self, record: Mapping[str, object]) -> ZoomAction:
        kind = str(record.get("action", "")).lower()
        if kind == "answer":
            return answer_from_json(record)
        if kind == "evaluate":
            raw = record.get("windows", [record.get("window")])
            if not isinstance(raw, list) or not raw:
                raise ActionParseError('evaluate needs "windows": [[start, end], ...]')
            windows = tuple(w for w in (json_window(v) for v in raw) if w is not None)
            if not windows:
                raise ActionParseError("evaluate needs at least one window")
            return EvaluateAction(windows)
        raise ActionParseError(f"unknown action {kind!r}; use evaluate or answer")


def _windows(args: tuple[str, ...]) -> tuple:  # type: ignore[type-arg]
    """Windows from ``[a, b], [c, d]`` or from bare numbers paired up ``a, b, c, d``."""
    if all(a.strip().startswith(("[", "(")) or "-" in a or " to " in a for a in args):
        return tuple(parse_window(a) for a in args)
    if len(args) % 2 == 0:
        return tuple(
            parse_window(f"[{a}, {b}]") for a, b in zip(args[::2], args[1::2], strict=True)
        )
    raise ActionParseError("windows are written [start, end], separated by commas")
