"""Text actions of the ClipQuery env (VideoAgent)."""

from __future__ import annotations

from collections.abc import Mapping

from video_env.actions.base import ActionSet, answer_from_json, parse_answer
from video_env.actions.parsing import ActionParseError, Call, parse_int, unquote
from video_env.actions.types import AnswerAction, QueryAction, SegmentQuery

ClipQueryAction = QueryAction | AnswerAction


class ClipQueryActionSet(ActionSet[ClipQueryAction]):
    """``query(k, "what to look for")`` (several per reply) and ``answer("text", [s, e])``."""

    names = ("query", "answer")

    def describe(self) -> str:
        """Documentation of the actions, for a prompt."""
        return (
            "Actions:\n"
            '- query(k, "description"): retrieve the frame of segment number k that best '
            "matches the description and caption it; write several query(...) calls to search "
            "several segments in one round.\n"
            '- answer("your answer", [start, end]): final answer and the window of its evidence.'
        )

    def example(self) -> str:
        """One valid action."""
        return 'query(2, "a person holding an umbrella")'

    def _pick(self, calls: list[Call]) -> list[Call]:
        """All queries of the reply, or its last answer if it answers."""
        answers = [c for c in calls if c.name == "answer"]
        return [answers[-1]] if answers else calls

    def _from_calls(self, calls: list[Call], strict: bool) -> ClipQueryAction:
        names = {c.name for c in calls}
        if strict and (len(names) != 1 or ("answer" in names and len(calls) != 1)):
            raise ActionParseError("give one answer, or one or more queries")
        if calls[-1].name == "answer":
            return parse_answer(calls[-1], strict)
        return QueryAction(tuple(_query(c) for c in calls))

    def _from_json(self, record: Mapping[str, object]) -> ClipQueryAction:
        kind = str(record.get("action", "")).lower()
        if kind == "answer":
            return answer_from_json(record)
        if kind == "query":
            raw = record.get("queries", [record])
            if not isinstance(raw, list) or not raw:
                raise ActionParseError('query needs "queries": [{"segment": k, "text": "..."}]')
            return QueryAction(tuple(_json_query(q) for q in raw))
        raise ActionParseError(f"unknown action {kind!r}; use query or answer")


def _query(call: Call) -> SegmentQuery:
    if len(call.args) < 2:
        raise ActionParseError('query takes a segment number and a description: query(2, "...")')
    text = unquote(", ".join(call.args[1:])).strip()
    if not text:
        raise ActionParseError("query needs a description of what to look for")
    return SegmentQuery(parse_int(call.args[0], "the segment"), text)


def _json_query(value: object) -> SegmentQuery:
    if not isinstance(value, Mapping):
        raise ActionParseError('each query is {"segment": k, "text": "..."}')
    text = str(value.get("text", value.get("description", ""))).strip()
    if not text:
        raise ActionParseError("query needs a description of what to look for")
    return SegmentQuery(parse_int(str(value.get("segment", "")), "the segment"), text)
