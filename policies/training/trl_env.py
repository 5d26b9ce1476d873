"""The Pacing env as TRL's multi-turn environment (``GRPOTrainer(environment_factory=...)``).

TRL's environment hook runs an agent as a growing tool-calling chat: each rollout gets its
own environment instance, ``reset(**row)`` adds the first observation to the dataset's
prompt, and every public method of the environment is a tool the model may call; a tool's
result is appended to the chat and the model replies again, until it replies without a
tool call (or the tool-call or token budget is spent). A tool result may hold images,
which TRL feeds to both generation and the loss's forward pass.

:class:`PacingToolEnv` exposes the Pacing actions as the tools ``speed``, ``rewatch`` and
``answer`` (each carrying the agent's rewritten notes, the env's memory) and returns the
next window's frames as images with the same window/memory/question text VideoScout's
prompt shows; ``get_reward`` is the env's composite reward ``R = r_acc + r_fmt +
r_timing`` (0 for an episode that never answers). It drives
:class:`~policies.training.adapter.PacingChatEnv`, so the rules, penalties and rewards are
the env's, unchanged.

**This is not the paper's format** (``docs/fidelity.md``): VideoScout sends a fresh chat
every turn (system prompt, the agent's notes, the new frames) and replies in Think-Act
tags; here the chat grows, earlier frames stay in context, actions are JSON tool calls,
and a call is well-formed when TRL's parser reads it. ``video-env train rl`` remains the
paper-faithful trainer; this module is the path to TRL's multi-GPU machinery.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

from policies import prompts
from policies.training.adapter import EngineModelSlot, PacingChatEnv
from policies.videoscout import VideoScoutPolicy
from video_env._optional import require
from video_env.actions.types import AnswerAction, InvalidAction, RewatchAction, SpeedAction
from video_env.backends.base import FrameBatch, VisionMessage
from video_env.envs.pacing_rules import PacingRules
from video_env.envs.rules_record import DEFAULT_LAYOUT, PromptLayout
from video_env.errors import ConfigError
from video_env.types import Interval, VideoQA

__all__ = [
    "TASK",
    "TOOL_ACTIONS",
    "PacingToolEnv",
    "answer_action",
    "pacing_env_factory",
    "rewatch_action",
    "speed_action",
    "tool_action",
    "tool_chat_processor",
    "tool_content",
    "tool_dataset_rows",
    "tool_system_prompt",
]

_PURPOSE = "TRL's GRPO trainer with the Pacing env"
#: The user turn that opens every episode, before its first window.
TASK = "Watch the video and answer the question."


def tool_system_prompt(rules: PacingRules | None = None) -> str:
    """The system prompt of the tool-calling variant (tools, pacing, notes; no Think-Act)."""
    fields = VideoScoutPolicy(EngineModelSlot(), rules=rules).pacing_fields()
    return prompts.render("videoscout/tools_system", **fields)


def tool_dataset_rows(
    samples: Sequence[VideoQA], rules: PacingRules | None = None
) -> list[dict[str, Any]]:
    """One training row per question: the system prompt, a task line and the question id.

    The question itself, its options and the first frames come from the env's first
    observation (``reset``); no row carries an answer or an annotation.
    """
    system = tool_system_prompt(rules)
    return [
        {
            "prompt": [
                {"role": "system", "content": system},
                {"role": "user", "content": TASK},
            ],
            "sample_id": sample.id,
        }
        for sample in samples
    ]


def tool_chat_processor(processor: Any) -> Any:
    """``processor`` with a chat template that renders tool calls, if it has none.

    Qwen2.5-VL's own template ignores tools. TRL ships the Qwen3-VL template, whose tool
    format (``<tools>`` in the system turn, ``<tool_call>{json}</tool_call>`` replies,
    ``<tool_response>`` in a user turn) is Qwen2.5's and whose vision placeholders are
    Qwen2.5-VL's; TRL recognises it and installs its tool-call parser.
    """
    require("trl", "train", _PURPOSE)
    from trl.chat_template_utils import qwen3_vl_chat_template, supports_tool_calling

    if not supports_tool_calling(processor):
        processor.chat_template = qwen3_vl_chat_template
    return processor


class PacingToolEnv:
    """One rollout's Pacing episode, with the actions as TRL tools.

    Args:
        samples: The questions by id (``meta["reference_chunk"]``: the timing reward's T).
        rules: Pacing rules (default: the paper's).
        max_turns: Env steps after which the episode ends without an answer.
        seed: Seed of every env reset.
        layout: VideoScout's prompt layout (its end note and the question's place).

    Attributes:
        episode: The current episode (``None`` before the first ``reset``).
        actions: The actions applied in the current episode, in order.
        resets: Episodes started by this instance.
        steps: Env steps taken by this instance (all episodes).
    """

    def __init__(
        self,
        samples: Mapping[str, VideoQA],
        *,
        rules: PacingRules | None = None,
        max_turns: int = 32,
        seed: int = 0,
        layout: PromptLayout = DEFAULT_LAYOUT,
    ) -> None:
        self.samples = samples
        self.rules = rules
        self.max_turns = max_turns
        self.seed = seed
        self.layout = layout
        self.episode: PacingChatEnv | None = None
        self.actions: list[Any] = []
        self.resets = 0
        self.steps = 0

    def reset(self, **row: Any) -> list[dict[str, Any]]:
        """Start the episode of ``row["sample_id"]``; its first window, frames and question."""
        sample_id = str(row.get("sample_id", ""))
        if sample_id not in self.samples:
            raise ConfigError(f"unknown sample_id {sample_id!r} in the training row")
        if self.episode is not None:
            self.episode.close()
        self.episode = PacingChatEnv(
            self.samples[sample_id],
            rules=self.rules,
            seed=self.seed,
            max_turns=self.max_turns,
            layout=self.layout,
        )
        self.actions = []
        self.resets += 1
        return tool_content(self.episode.reset())

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

    def get_reward(self) -> float:
        """The episode's composite reward (ends an unanswered episode: reward 0)."""
        if self.episode is None:
            return 0.0
        return self.episode.finish("no_answer")

    def _step(self, action: Any) -> list[dict[str, Any]] | str:
        if self.episode is None or self.episode.done:
            raise ConfigError("the episode is over: reply without calling a tool")
        result = self.episode.step_action(action)
        self.actions.append(action)
        self.steps += 1
        if result.messages is None:
            record = self.episode.record or {}
            return f"The episode is over ({record.get('ended_by', 'ended')})."
        return tool_content(result.messages)


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


#: The tools by name, as Pacing actions (what :class:`PacingToolEnv`'s methods apply).
TOOL_ACTIONS: Mapping[str, Callable[..., Any]] = MappingProxyType(
    {"speed": speed_action, "rewatch": rewatch_action, "answer": answer_action}
)


def tool_action(name: str, arguments: Mapping[str, Any]) -> Any:
    """A parsed tool call as the Pacing action it applies (``InvalidAction`` if it can't).

    Where TRL reports a call it cannot make (an unknown tool, arguments that do not fit
    the tool's signature) back to the model as an error and takes no env step, an agent
    outside TRL (:mod:`policies.videoscout_tools`) has the env judge it as an invalid action.
    """
    build = TOOL_ACTIONS.get(name)
    if build is None:
        return InvalidAction(f"unknown tool {name!r}: call one of {', '.join(TOOL_ACTIONS)}")
    try:
        return build(**arguments)
    except TypeError as exc:  # missing or unknown arguments
        return InvalidAction(f"bad arguments for {name}: {exc}")


def pacing_env_factory(
    samples: Sequence[VideoQA],
    *,
    rules: PacingRules | None = None,
    max_turns: int = 32,
    seed: int = 0,
    layout: PromptLayout = DEFAULT_LAYOUT,
) -> Callable[[], PacingToolEnv]:
    """The ``environment_factory`` for :class:`PacingToolEnv` over ``samples``."""
    by_id = samples_by_id(samples)

    def factory() -> PacingToolEnv:
        return PacingToolEnv(
            by_id,
            rules=rules,
            max_turns=max_turns,
            seed=seed,
            layout=layout,
        )

    return factory


def samples_by_id(samples: Sequence[VideoQA]) -> dict[str, VideoQA]:
    """``samples`` by id, the key TRL's dataset rows name an episode's sample by.

    Raises:
        ConfigError: If two samples share an id.
    """
    by_id = {sample.id: sample for sample in samples}
    if len(by_id) != len(samples):
        raise ConfigError("sample ids must be unique")
    return by_id


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
