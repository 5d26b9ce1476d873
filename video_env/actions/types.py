"""Structured actions of the three environments.

Chunk and segment numbers are 1-based, as the environments show them (and as the papers'
prompts write them). Windows are :class:`~video_env.types.Interval` in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from video_env.types import Interval


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


@dataclass(frozen=True)
class SpeedAction:
    """Pacing: move forward at ``factor`` x speed (1, 2 or 4 chunks per turn)."""

    factor: int
    memory: str | None = None
    well_formed: bool = field(default=True, compare=False)


@dataclass(frozen=True)
class RewatchAction:
    """Pacing: rewatch chunk number ``chunk``, alone at 1x.

    The number is absolute, as in the observation's ``chunks``, and must lie in the current
    window.
    """

    chunk: int
    memory: str | None = None
    well_formed: bool = field(default=True, compare=False)


@dataclass(frozen=True)
class EvaluateAction:
    """Zoom: run the VLM on each window (frames and resolution follow its length)."""

    windows: tuple[Interval, ...]


@dataclass(frozen=True)
class SegmentQuery:
    """ClipQuery: find the frame of segment number ``segment`` that best matches ``text``."""

    segment: int
    text: str


@dataclass(frozen=True)
class QueryAction:
    """ClipQuery: one round of segment queries."""

    queries: tuple[SegmentQuery, ...]


@dataclass(frozen=True)
class InvalidAction:
    """An action that could not be read (e.g. unparseable text); the env reports ``reason``."""

    reason: str
    raw: str = ""


Action = AnswerAction | SpeedAction | RewatchAction | EvaluateAction | QueryAction | InvalidAction


def describe_action(action: Action) -> str:
    """A compact text form of an action, for logs and trajectories."""
    if isinstance(action, AnswerAction):
        window = f", [{action.window.start:g}, {action.window.end:g}]" if action.window else ""
        return f"answer({action.text!r}{window})"
    if isinstance(action, SpeedAction):
        return f"speed({action.factor}x)"
    if isinstance(action, RewatchAction):
        return f"rewatch({action.chunk})"
    if isinstance(action, EvaluateAction):
        return "evaluate(" + ", ".join(f"[{w.start:g}, {w.end:g}]" for w in action.windows) + ")"
    if isinstance(action, InvalidAction):
        return f"invalid({action.raw[:80]!r})"
    return " ".join(f"query({q.segment}, {q.text!r})" for q in action.queries)
