"""Structured actions of the three environments.

Chunk and segment numbers are 1-based, as the environments show them (and as the papers'
prompts write them). Windows are :class:`~video_env.types.Interval` in seconds.

Every field's type is checked at construction: a wrong type raises :class:`TypeError`
naming the field (numpy integers count as ints; lists of windows or queries become
tuples). Sizes (text lengths, counts) are checked by the environment before a step, which
makes an oversized action an invalid one (see :mod:`video_env.actions.validation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from video_env.actions.validation import (
    MAX_DESCRIPTION_CHARS,
    as_flag,
    as_int,
    as_items,
    as_optional_text,
    as_text,
    as_window,
    check_count,
    check_int_size,
    check_json_size,
    check_text_size,
)
from video_env.errors import InvalidActionError
from video_env.types import Interval


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)


@dataclass(frozen=True)
class AnswerAction:
    """End the episode with an answer and, optionally, the window of its evidence.

    Attributes:
        text: The answer (an option letter or text for MCQs, free text otherwise).
        window: Where the evidence is, in seconds.
        memory: Pacing only: the agent's rewritten notes.
        well_formed: Pacing only: the reply it was parsed from followed VideoScout's
            Think-Act format exactly (see :class:`~video_env.actions.PacingActionSet`);
            structured actions are well-formed by construction. Not compared.
    """

    text: str
    window: Interval | None = None
    memory: str | None = None
    well_formed: bool = field(default=True, compare=False)

    def __post_init__(self) -> None:
        as_text(self.text, "the answer text")
        as_window(self.window, "the answer window")
        as_optional_text(self.memory, "memory")
        _set(self, "well_formed", as_flag(self.well_formed, "well_formed"))


@dataclass(frozen=True)
class SpeedAction:
    """Pacing: move forward at ``factor`` x speed (1, 2 or 4 chunks per turn)."""

    factor: int
    memory: str | None = None
    well_formed: bool = field(default=True, compare=False)

    def __post_init__(self) -> None:
        _set(self, "factor", as_int(self.factor, "the speed factor"))
        as_optional_text(self.memory, "memory")
        _set(self, "well_formed", as_flag(self.well_formed, "well_formed"))


@dataclass(frozen=True)
class RewatchAction:
    """Pacing: rewatch chunk number ``chunk``, alone at 1x.

    The number is absolute, as in the observation's ``chunks``, and must lie in the current
    window.
    """

    chunk: int
    memory: str | None = None
    well_formed: bool = field(default=True, compare=False)

    def __post_init__(self) -> None:
        _set(self, "chunk", as_int(self.chunk, "the rewatch chunk"))
        as_optional_text(self.memory, "memory")
        _set(self, "well_formed", as_flag(self.well_formed, "well_formed"))


@dataclass(frozen=True)
class EvaluateAction:
    """Zoom: run the VLM on each window (frames and resolution follow its length)."""

    windows: tuple[Interval, ...]

    def __post_init__(self) -> None:
        _set(self, "windows", as_items(self.windows, Interval, "evaluate windows"))


@dataclass(frozen=True)
class SegmentQuery:
    """ClipQuery: find the frame of segment number ``segment`` that best matches ``text``."""

    segment: int
    text: str

    def __post_init__(self) -> None:
        _set(self, "segment", as_int(self.segment, "the query segment"))
        as_text(self.text, "the query text")


@dataclass(frozen=True)
class QueryAction:
    """ClipQuery: one round of segment queries."""

    queries: tuple[SegmentQuery, ...]

    def __post_init__(self) -> None:
        _set(self, "queries", as_items(self.queries, SegmentQuery, "queries"))


@dataclass(frozen=True)
class ToolCall:
    """Tools: one call of a tool of the env's preset, named and argued as its system does.

    ``ToolCall("crop_video", {"start_time": 10, "end_time": 40})`` under the ``longvt``
    preset; ``ToolCall("finish", {"answer": "B"})`` answers under ``dvd``. The preset's
    tool spec says what each argument means and in which unit
    (:mod:`video_env.envs.tool_presets`); the env checks the values.

    Attributes:
        name: The tool's name as the preset's system writes it.
        arguments: JSON-like values by argument name (a dict is copied).
    """

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        as_text(self.name, "the tool name")
        if not isinstance(self.arguments, Mapping):
            raise TypeError(
                f"tool arguments must be a mapping, got {type(self.arguments).__name__}"
            )
        if not all(isinstance(key, str) for key in self.arguments):
            raise TypeError("tool argument names must be str")
        _set(self, "arguments", dict(self.arguments))


@dataclass(frozen=True)
class InvalidAction:
    """An action that could not be read (e.g. unparseable text); the env reports ``reason``."""

    reason: str
    raw: str = ""

    def __post_init__(self) -> None:
        as_text(self.reason, "the reason")
        as_text(self.raw, "raw")


Action = (
    AnswerAction
    | SpeedAction
    | RewatchAction
    | EvaluateAction
    | QueryAction
    | ToolCall
    | InvalidAction
)


def check_action(action: object) -> None:
    """Check an action's sizes and (again) its field types, before anything else.

    Types are re-checked because a frozen dataclass can be built around its constructor;
    counts are checked before any item is looked at, so a huge action costs no more than
    a small one. Objects that are not action dataclasses (dicts, strings) pass: the env
    coerces or refuses them.

    Raises:
        InvalidActionError: Naming the field that is too large or of the wrong type.
    """
    try:
        if isinstance(action, AnswerAction):
            _check_memory(action)
            check_text_size(as_text(action.text, "the answer text"), "the answer text")
            as_window(action.window, "the answer window")
        elif isinstance(action, (SpeedAction, RewatchAction)):
            _check_memory(action)
            name = "factor" if isinstance(action, SpeedAction) else "chunk"
            check_int_size(as_int(getattr(action, name), f"the {name}"), f"the {name}")
        elif isinstance(action, EvaluateAction):
            check_count(action.windows, "windows")
            as_items(action.windows, Interval, "evaluate windows")
        elif isinstance(action, QueryAction):
            check_count(action.queries, "queries")
            for query in as_items(action.queries, SegmentQuery, "queries"):
                check_int_size(as_int(query.segment, "the query segment"), "the query segment")
                check_text_size(as_text(query.text, "the query text"), "the query text")
        elif isinstance(action, ToolCall):
            check_text_size(as_text(action.name, "the tool name"), "the tool name")
            check_json_size(action.arguments, "the tool arguments")
        elif isinstance(action, InvalidAction):
            as_text(action.reason, "the reason")
    except TypeError as exc:
        raise InvalidActionError(f"malformed action: {exc}") from None


def _check_memory(action: AnswerAction | SpeedAction | RewatchAction) -> None:
    check_text_size(as_optional_text(action.memory, "memory"), "memory")


#: Characters of one text shown in a description (answers, query texts).
_SHOWN_CHARS = 200


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "...")


def _shown_value(value: object) -> str:
    """A tool argument for a description: texts cut, lists shown briefly."""
    if isinstance(value, str):
        return _shown(value)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_shown_value(v) for v in list(value)[:8])
        return f"[{inner}{', ...' if len(value) > 8 else ''}]"
    if isinstance(value, Mapping):
        return "{...}"
    return repr(value)[:40]


def describe_action(action: Action, max_chars: int = MAX_DESCRIPTION_CHARS) -> str:
    """A compact text form of an action, for logs and trajectories.

    At most ``max_chars`` characters: each text is cut to 200 and the list of windows or
    queries stops once the description is full (``...`` marks the cut). Call it on an
    action :func:`check_action` accepted.
    """
    if isinstance(action, AnswerAction):
        window = f", [{action.window.start:g}, {action.window.end:g}]" if action.window else ""
        text = f"answer({_shown(action.text)}{window})"
    elif isinstance(action, SpeedAction):
        text = f"speed({action.factor}x)"
    elif isinstance(action, RewatchAction):
        text = f"rewatch({action.chunk})"
    elif isinstance(action, EvaluateAction):
        parts = (f"[{w.start:g}, {w.end:g}]" for w in action.windows)
        text = "evaluate(" + _joined(parts, ", ", max_chars) + ")"
    elif isinstance(action, InvalidAction):
        text = f"invalid({action.raw[:80]!r})"
    elif isinstance(action, ToolCall):
        parts = (f"{k}={_shown_value(v)}" for k, v in action.arguments.items())
        text = f"{action.name[:_SHOWN_CHARS]}(" + _joined(parts, ", ", max_chars) + ")"
    else:
        parts = (f"query({q.segment}, {_shown(q.text)})" for q in action.queries)
        text = _joined(parts, " ", max_chars)
    return text if len(text) <= max_chars else text[: max_chars - 3] + "..."


#: The kind of each action dataclass, as trajectories name it.
_KINDS: dict[type[Any], str] = {
    AnswerAction: "answer",
    SpeedAction: "speed",
    RewatchAction: "rewatch",
    EvaluateAction: "evaluate",
    QueryAction: "query",
    ToolCall: "tool",
}


def rejected_summary(action: object) -> str:
    """What a trajectory shows for an action refused before it could be described."""
    return f"{_KINDS.get(type(action), type(action).__name__)}(...) (rejected)"


def _joined(parts: Any, sep: str, max_chars: int) -> str:
    """``sep.join(parts)``, stopping (with ``...``) once it exceeds ``max_chars``."""
    out: list[str] = []
    size = 0
    for part in parts:
        if size > max_chars:
            out.append("...")
            break
        out.append(part)
        size += len(part) + len(sep)
    return sep.join(out)
