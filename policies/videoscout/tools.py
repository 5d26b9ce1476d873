"""VideoScout in TRL's tool-calling format: the agent ``video-env train trl`` trains.

``train trl`` runs the Pacing env as TRL's growing tool-calling chat
(:mod:`policies.training.trl_env`): a system prompt listing the tools ``speed``,
``rewatch`` and ``answer``, the first window in the user turn, then one assistant turn
with a tool call and one tool result (the next window's frames as images, its text,
the notes and the question) per env step. A checkpoint trained there (or by ``train
sft`` on ``train tool-chats`` data) writes tool calls, not Think-Act tags, so
:class:`~policies.videoscout.VideoScoutPolicy` cannot play it. :class:`VideoScoutToolPolicy`
plays it in a benchmark by keeping the same chat over an episode: each observation is
rendered as ``PacingToolEnv`` renders it, each reply parsed as TRL parses it, and its
first tool call becomes the action (:func:`~policies.videoscout.tool_calls.tool_action`).
The chat is rendered anew from its messages each turn, as the tool-call SFT data is
(:func:`~policies.training.tool_chats.tool_chat`); TRL's rollouts instead join the
generated token ids as they came, which is the same text where a reply is in the
template's form (one call, the template's JSON layout) and differs where it is not.

Where a rollout in TRL and an episode here differ (``docs/fidelity.md``): a reply
without a tool call ends a TRL rollout, here it is an invalid action under the env's
rules (penalty, error allowance), as a malformed Think-Act reply is; a call TRL cannot
make (an unknown tool, arguments that do not fit) is reported back to the model by TRL
without an env step, here it is an invalid action too; of several calls in one reply
only the first is applied. A chat that fills the model's context ends the episode
unanswered in both (here ``ended_by`` ``context_full``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from policies.base import Policy
from policies.videoscout.prompt import DEFAULT_LAYOUT, PromptLayout, VideoScoutPrompt
from policies.videoscout.record import trained_layout, trained_rules
from policies.videoscout.tool_calls import (
    TASK,
    tool_action,
    tool_content,
    tool_methods,
    tool_system_prompt,
)
from video_env.actions.types import InvalidAction
from video_env.envs.pacing_rules import PacingRules
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost

__all__ = [
    "VideoScoutToolPolicy",
    "first_call",
    "format_valid_call",
    "make_videoscout_tools",
    "reply_action",
    "writes_tool_calls",
]

#: The chat-template text of a template that renders an assistant's tool calls.
_TOOL_CALLS_MARK = "tool_calls"


class VideoScoutToolPolicy(Policy):
    """A tool-calling VLM pacing through the video in TRL's growing chat.

    Args:
        model: The model (:class:`~video_env.backends.transformers_tool_chat.TransformersToolChat`
            or anything with its ``reply(messages, tools, max_new_tokens=, temperature=)``).
        rules: The env's pacing rules, described in the system prompt (default: the paper's).
        layout: VideoScout's prompt layout (its end note and the question's place), for
            the window text of each tool result.
        max_new_tokens: Generation budget per turn.
        temperature: Sampling temperature (0: greedy).
        name: Name in result tables (default ``videoscout-tools[<model>]``).

    Attributes:
        chat: The current episode's chat, as the model last saw it plus its reply.
        last_reply: The model's last generated text.
    """

    env_kinds = ("pacing",)
    offline = False

    def __init__(
        self,
        model: Any,
        *,
        rules: PacingRules | None = None,
        layout: PromptLayout = DEFAULT_LAYOUT,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        name: str | None = None,
    ) -> None:
        super().__init__()
        if max_new_tokens < 1 or temperature < 0:
            raise ConfigError("max_new_tokens must be >= 1 and temperature >= 0")
        self.model = model
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.name = name or f"videoscout-tools[{getattr(model, 'name', type(model).__name__)}]"
        # VideoScout's prompt renders each window exactly as TRL's env does
        self._prompt = VideoScoutPrompt(rules, layout)
        self.rules = self._prompt.rules
        self.env_kwargs: Mapping[str, Mapping[str, Any]] = {"pacing": self._prompt.env_kwargs}
        self._tools = tool_methods()
        self.chat: list[dict[str, Any]] = []
        self.last_reply = ""
        self._last_call: str | None = None

    @property
    def perceivers(self) -> tuple[Any, ...]:
        """The model: it reads the frames itself (the env runs without sensors)."""
        return (self.model,)

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Start the episode's chat: the tools' system prompt, the task and the first window."""
        self.chat, self._last_call = [], None  # nothing of an earlier episode stays
        task = [{"type": "text", "text": TASK}, *self._window(observation)]
        self.chat = [
            {"role": "system", "content": tool_system_prompt(self.rules)},
            {"role": "user", "content": task},
        ]

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """The model's next tool call, as the Pacing action it applies.

        Raises:
            ConfigError: Before :meth:`reset` (the episode's chat has not started).
        """
        if not self.chat:
            raise ConfigError("reset the policy with the episode's first observation first")
        if self.chat[-1]["role"] == "assistant":  # the last action's result
            content = self._window(observation)
            if self._last_call is not None:
                self.chat.append({"role": "tool", "name": self._last_call, "content": content})
            else:  # no call to answer: the env's feedback as a user turn
                self.chat.append({"role": "user", "content": content})
        reply = self.model.reply(
            self.chat,
            self._tools,
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
        )
        self._own_usage = self._own_usage + Cost(
            llm_calls=1,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
        )
        self.last_reply = reply.text
        self.chat.append(reply.message)
        call = first_call(reply.message)
        self._last_call = call[0] if call is not None else None
        return reply_action(reply.message)

    @property
    def replies(self) -> list[dict[str, Any]]:
        """The current episode's assistant turns, as parsed (text and tool calls)."""
        return [m for m in self.chat if m.get("role") == "assistant"]

    def _window(self, observation: dict[str, Any]) -> list[dict[str, Any]]:
        return tool_content(self._prompt.messages(observation))


def first_call(message: Mapping[str, Any]) -> tuple[str, Any] | None:
    """An assistant turn's first tool call as ``(name, arguments)``; ``None`` without one.

    Reads TRL's parsed form (``{"type": "function", "function": {"name", "arguments"}}``)
    and the flat one its validator also takes (``{"name", "arguments"}``); anything else
    in ``tool_calls`` is a call without a name.
    """
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or not calls:
        return None
    call = calls[0] if isinstance(calls[0], Mapping) else {}
    function = call.get("function", call)
    if not isinstance(function, Mapping):
        function = {}
    return str(function.get("name", "")), function.get("arguments")


def reply_action(message: Mapping[str, Any]) -> Any:
    """An assistant turn's first tool call as the Pacing action it applies.

    ``InvalidAction`` for a turn without a call, a call whose arguments are not an
    object, an unknown tool or arguments that do not fit it
    (:func:`~policies.videoscout.tool_calls.tool_action`).
    """
    call = first_call(message)
    if call is None:
        return InvalidAction("no tool call: call speed, rewatch or answer")
    name, arguments = call
    if not isinstance(arguments, Mapping):
        return InvalidAction(f"the {name or 'tool'} call's arguments are not an object")
    return tool_action(name, arguments)


def format_valid_call(message: Mapping[str, Any]) -> bool:
    """Whether an assistant turn's first tool call parses into a Pacing action.

    The tool form of a format-valid Think-Act turn (a complete reply whose action
    parses): the env may still refuse the action under its rules (a speed it lacks, a
    chunk outside the window), as it may a Think-Act reply's.
    """
    return not isinstance(reply_action(message), InvalidAction)


def writes_tool_calls(folder: str | Path) -> bool:
    """Whether the checkpoint in ``folder`` was trained to write tool calls.

    Its saved chat template renders an assistant's ``tool_calls`` (``train sft`` on tool
    chats and ``train trl`` save TRL's); Qwen2.5-VL's own template, which the Think-Act
    checkpoints keep, ignores them.
    """
    path = Path(folder)
    texts = [path / "chat_template.jinja", path / "chat_template.json"]
    return any(p.is_file() and _TOOL_CALLS_MARK in p.read_text("utf-8") for p in texts)


def make_videoscout_tools(spec: str, **settings: Any) -> VideoScoutToolPolicy:
    """``videoscout-tools:PATH`` in the registry (``qwen2.5-vl:PATH`` is accepted too).

    The checkpoint's recorded pacing rules and prompt layout (``videoscout.json``) apply
    unless ``rules`` / ``layout`` are given, as for ``videoscout:``.
    """
    from video_env.backends.transformers_tool_chat import TransformersToolChat

    name = f"videoscout-tools:{spec}"
    try:
        inspect.signature(VideoScoutToolPolicy).bind(None, **settings)
    except TypeError as exc:
        raise ConfigError(f"policy {name!r}: {exc}") from None
    kind, _, rest = spec.partition(":")
    folder = rest if kind in ("qwen2.5-vl", "transformers") and rest else spec
    if not folder:
        raise ConfigError("videoscout-tools needs a checkpoint: videoscout-tools:PATH")
    if "rules" not in settings and (recorded := trained_rules(folder)) is not None:
        settings["rules"] = recorded
    if "layout" not in settings:
        settings["layout"] = trained_layout(folder)
    return VideoScoutToolPolicy(TransformersToolChat(folder), name=name, **settings)
