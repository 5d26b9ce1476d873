"""VideoScout's tool-calling format: the Pacing actions as tools, each window as a tool result.

TRL's environment hook and the tool-calling policy (:mod:`policies.videoscout.tools`) run
VideoScout as a growing tool-calling chat. Both take their format from here: the task line
that opens an episode, the tools' system prompt, the three tools (:class:`PacingTools`:
``speed``, ``rewatch`` and ``answer``, each with the agent's rewritten notes), how a tool
call becomes a Pacing action (:func:`tool_action`) and how a window becomes a tool result
(:func:`tool_content`). The trainer's environment
(:class:`~policies.training.trl_env.PacingToolEnv`) is a :class:`PacingTools` that applies
the actions in a Pacing env.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from policies import prompts
from policies.videoscout.prompt import VideoScoutPrompt
from video_env._optional import require
from video_env.actions.types import AnswerAction, InvalidAction, RewatchAction, SpeedAction
from video_env.backends.base import FrameBatch, VisionMessage
from video_env.envs.pacing_rules import PacingRules
from video_env.errors import ConfigError
from video_env.types import Interval

__all__ = [
    "TASK",
    "TOOL_ACTIONS",
    "PacingTools",
    "answer_action",
    "rewatch_action",
    "speed_action",
    "tool_action",
    "tool_content",
    "tool_methods",
    "tool_system_prompt",
]

_PURPOSE = "VideoScout's tool-calling format"

#: The user turn that opens every episode, before its first window.
TASK = "Watch the video and answer the question."


def tool_system_prompt(rules: PacingRules | None = None) -> str:
    """The system prompt of the tool-calling variant (tools, pacing, notes; no Think-Act)."""
    return prompts.render("videoscout/tools_system", **VideoScoutPrompt(rules).pacing_fields())


class PacingTools:
    """The Pacing actions as tools (their signatures and docstrings are the tools' schemas).

    A subclass applies each call's action in ``_step``.
    """

    def speed(self, factor: int, notes: str = "") -> list[dict[str, Any]] | str:
        """Watch the next chunks of the video at a speed.

        Args:
            factor: 1, 2 or 4: watch the next 1, 2 or 4 chunks (more chunks, fewer and
                smaller frames per chunk).
            notes: Your updated notes, replacing the previous ones.
        """
        return self._step(speed_action(factor, notes))

    def rewatch(self, chunk: int, notes: str = "") -> list[dict[str, Any]] | str:
        """Watch one chunk of the current multi-chunk window again, alone, at 1x.

        Args:
            chunk: The chunk's number as shown; it must be in the current window.
            notes: Your updated notes, replacing the previous ones.
        """
        return self._step(rewatch_action(chunk, notes))

    def answer(
        self, answer: str, start: float, end: float, notes: str = ""
    ) -> list[dict[str, Any]] | str:
        """Answer the question and end the episode.

        Args:
            answer: The answer: the option letter for a multiple-choice question.
            start: Start of the evidence window, in seconds.
            end: End of the evidence window, in seconds.
            notes: Your final notes.
        """
        return self._step(answer_action(answer, start, end, notes))

    def _step(self, action: Any) -> list[dict[str, Any]] | str:
        """Apply ``action``; the next window as a tool result, or a closing text."""
        raise ConfigError("these tools only describe the calls: no env applies them")


def tool_methods() -> list[Any]:
    """The tools as ``GRPOTrainer`` lists them: bound methods, by name.

    ``reset`` and ``get_reward`` are not tools; the schemas do not depend on the rules.
    """
    tools = PacingTools()
    return [tools.answer, tools.rewatch, tools.speed]


def _whole(value: Any) -> int:
    """``value`` as a whole number: an int, an integral float, or digits in a string.

    Raises:
        ValueError: For a bool, a fraction, an infinity or text that is no number.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a number")
    if isinstance(value, float):
        if not value.is_integer():  # also inf and nan
            raise ValueError(f"{value!r} is not a whole number")
        return int(value)
    return int(value)  # TypeError for other kinds


def _notes(notes: Any) -> str | None:
    """The call's ``notes`` as the env's memory (``None``: none written)."""
    if notes is None or isinstance(notes, str):
        return notes or None
    raise ValueError(f"notes must be text, got {type(notes).__name__}")


def speed_action(factor: Any, notes: Any = "") -> SpeedAction | InvalidAction:
    """The ``speed`` tool's call as a Pacing action (invalid for a factor that is no number)."""
    refusal = f"speed factor must be 1, 2 or 4, got {factor!r}"
    return _numbered_action(SpeedAction, factor, notes, refusal)


def rewatch_action(chunk: Any, notes: Any = "") -> RewatchAction | InvalidAction:
    """The ``rewatch`` tool's call as a Pacing action."""
    refusal = f"rewatch needs a chunk number, got {chunk!r}"
    return _numbered_action(RewatchAction, chunk, notes, refusal)


_Numbered = TypeVar("_Numbered", SpeedAction, RewatchAction)


def _numbered_action(
    kind: type[_Numbered], number: Any, notes: Any, refusal: str
) -> _Numbered | InvalidAction:
    """``kind(number, notes)`` with a whole number and text notes, else ``InvalidAction``."""
    try:
        memory = _notes(notes)
    except ValueError as exc:
        return InvalidAction(str(exc))
    try:
        return kind(_whole(number), memory)
    except (TypeError, ValueError, OverflowError):
        return InvalidAction(refusal)


def answer_action(
    answer: Any, start: Any, end: Any, notes: Any = ""
) -> AnswerAction | InvalidAction:
    """The ``answer`` tool's call as a Pacing action (invalid without a finite window)."""
    try:
        memory = _notes(notes)
        window = Interval(float(start), float(end))
    except (TypeError, ValueError, OverflowError) as exc:
        return InvalidAction(f"answer needs a window [start, end] and text notes: {exc}")
    return AnswerAction(str(answer).strip(), window, memory)


#: The tools by name, as Pacing actions (what :class:`PacingTools`' methods apply).
TOOL_ACTIONS: Mapping[str, Callable[..., Any]] = MappingProxyType(
    {"speed": speed_action, "rewatch": rewatch_action, "answer": answer_action}
)


def tool_action(name: str, arguments: Mapping[str, Any]) -> Any:
    """A parsed tool call as the Pacing action it applies (``InvalidAction`` if it can't).

    Where TRL reports a call it cannot make (an unknown tool, arguments that do not fit
    the tool's signature) back to the model as an error and takes no env step, an agent
    outside TRL (:mod:`policies.videoscout.tools`) has the env judge it as an invalid action.
    """
    build = TOOL_ACTIONS.get(name)
    if build is None:
        return InvalidAction(f"unknown tool {name!r}: call one of {', '.join(TOOL_ACTIONS)}")
    try:
        return build(**arguments)
    except TypeError as exc:  # missing or unknown arguments
        return InvalidAction(f"bad arguments for {name}: {exc}")


def tool_content(messages: list[VisionMessage]) -> list[dict[str, Any]]:
    """The user turn of a VideoScout chat as TRL content parts: texts and one image a frame.

    (TRL 1.16 carries a tool result's frames into the loss's forward pass only as images,
    so a window's frames are not fed as one video, as VideoScout's own chat feeds them.)
    """
    image = require("PIL.Image", "train", _PURPOSE)
    content = messages[-1]["content"]
    parts: list[dict[str, Any]] = []
    for part in [content] if isinstance(content, str) else content:
        if isinstance(part, FrameBatch):
            for frame in part.pixels():
                parts.append({"type": "image", "image": image.fromarray(frame)})
        else:
            parts.append({"type": "text", "text": str(part)})
    return parts
