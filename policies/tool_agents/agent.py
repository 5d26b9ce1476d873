"""What the prompted tool agents share: the growing chat, reply counts, the offline fallback.

A :class:`ToolAgentPolicy` plays one Tools preset. With an LLM it keeps one chat (system
prompt, question, then each result as a message), asks for one call per turn in the
preset's reply format and parses it with the env's own action set
(:class:`~video_env.actions.tools.ToolsActionSet`). A reply with no readable call is
re-asked once; a second miss (or a failed call) is counted in ``reply_failures`` and the
agent's offline planner takes that turn. Without an LLM the offline planner plays every
turn and the policy is named ``NAME[offline]``.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, ClassVar

from policies.base import Policy
from policies.observations import parse_options
from policies.reasoning import OfflineReasoner
from policies.tool_agents.calls import (
    VideoUnits,
    answer_call,
    content_texts,
    duration_of,
    preset_for,
    turns_left,
)
from policies.tool_agents.evidence import offline_answer
from video_env.actions.parsing import ActionParseError
from video_env.actions.tools import ToolsActionSet
from video_env.actions.types import ToolCall
from video_env.backends.llm.base import LLM, Message
from video_env.envs.tool_presets import resolve_preset
from video_env.errors import BackendError

#: Longest answer text an agent sends (the env refuses longer texts).
MAX_ANSWER_CHARS = 2048


@dataclass
class ToolChat:
    """One episode's chat with the LLM; replies are calls in the preset's format.

    Args:
        llm: The model.
        parser: The preset's action set.
        max_tokens: Cap on a reply.
        no_call: The message that re-asks after a reply without a call.

    Attributes:
        used: Replies that gave a call (or the text asked for).
        failures: Turns whose reply could not be used (after the re-ask).
        reasks: Re-asks made.
        errors: Why each failure failed.
    """

    llm: LLM
    parser: ToolsActionSet
    max_tokens: int = 1024
    no_call: str = "There is no function call in your response."
    messages: list[Message] = field(default_factory=list)
    used: int = 0
    failures: int = 0
    reasks: int = 0
    errors: list[str] = field(default_factory=list)

    def start(self, system: str, user: str) -> None:
        """A new conversation."""
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def say(self, text: str) -> None:
        """Add a user message (a tool's output, a step instruction)."""
        if self.messages and self.messages[-1]["role"] == "user":
            self.messages[-1] = {
                "role": "user",
                "content": self.messages[-1]["content"] + "\n\n" + text,
            }
        else:
            self.messages.append({"role": "user", "content": text})

    def reply(self) -> str | None:
        """The model's next reply (kept in the chat), or ``None`` when the call failed."""
        try:
            text = self.llm.chat(self.messages, max_tokens=self.max_tokens).text
        except BackendError as exc:
            self.fail(f"LLM call failed: {exc}")
            return None
        self.messages.append({"role": "assistant", "content": text})
        return text

    def call(self) -> ToolCall | None:
        """The next reply's call; one re-ask when it has none; ``None`` if still none."""
        for attempt in range(2):
            text = self.reply()
            if text is None:
                return None
            try:
                call = self.parser.parse(text)
            except ActionParseError as exc:
                if attempt == 0:
                    self.reasks += 1
                    self.say(f"{self.no_call} ({exc})")
                    continue
                self.fail(f"no call in the reply: {exc}")
                return None
            self.used += 1
            return call
        return None  # pragma: no cover - the loop returns

    def fail(self, message: str) -> None:
        """Count a turn whose reply could not be used, and say why."""
        self.failures += 1
        self.errors.append(message)


class ToolAgentPolicy(Policy):
    """A prompted agent over one Tools preset (see the module docstring).

    Subclasses set ``base_name``, ``preset_name`` and ``weights`` and implement the
    prompts (:meth:`_start_chat`, :meth:`_llm_turn`) and the offline planner
    (:meth:`_offline_call`, which returns ``None`` to answer).

    Args:
        llm: The LLM (``None``: the offline planner).
        max_tokens: Cap on a reply.
    """

    env_kinds = ("tools",)
    base_name: ClassVar[str] = "tool-agent"
    preset_name: ClassVar[str] = "videoseek"
    #: The weight of each tool's results in the offline answer's votes.
    weights: ClassVar[dict[str, float]] = {}

    def __init__(self, llm: LLM | None = None, max_tokens: int = 1024) -> None:
        super().__init__(llm)
        self.preset = resolve_preset(self.preset_name)
        self.parser = ToolsActionSet(self.preset)
        self.env_kwargs = {"tools": {"preset": self.preset_name}}
        self.name = self.base_name if llm is not None else f"{self.base_name}[offline]"
        self.reasoner = OfflineReasoner()
        self.max_tokens = max_tokens
        self.chat = ToolChat(llm, self.parser, max_tokens) if llm is not None else None
        self.units = VideoUnits(0.0)
        self._seen = 0

    @property
    def reply_failures(self) -> int:
        """Turns whose LLM reply could not be used."""
        return self.chat.failures if self.chat is not None else 0

    @property
    def replies_used(self) -> int:
        """LLM replies that gave a call."""
        return self.chat.used if self.chat is not None else 0

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Start the episode: the planner's state, and the chat with an LLM.

        Raises:
            ConfigError: When the env plays another preset than the agent's.
        """
        preset_for(self.preset, info.get("legal_actions", ()))
        self.units = VideoUnits(duration_of(observation))
        self._seen = 0
        self._reset_plan(observation)
        if self.chat is not None:
            self._start_chat(self.chat, observation)

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """One call, the LLM's (or the planner's when the reply was unusable), or the answer."""
        results = list(observation["results"])
        new, self._seen = results[self._seen :], len(results)
        if self.chat is not None:
            call = self._llm_turn(self.chat, observation, new)
            if call is not None and turns_left(observation) <= 1 and not self._answers(call):
                self.chat.used -= 1  # the last turn has room for the answer only
                self.chat.fail(f"the last turn's reply called {call.name}, not the answer")
                call = None
            if call is not None:
                return call
        call = self._offline_call(observation)
        return call if call is not None else self.offline_answer(observation)

    def _answers(self, call: ToolCall) -> bool:
        """Whether ``call`` is the preset's answer tool."""
        return call.name.lower() == self.preset.answer_tool.name.lower()

    def offline_answer(self, observation: dict[str, Any]) -> ToolCall:
        """The answer voted by the results (:mod:`policies.tool_agents.evidence`)."""
        options = parse_options(observation["options"])
        texts = content_texts(observation)
        answer, _ = offline_answer(
            str(observation["question"]), options, texts, self.weights, self.reasoner
        )
        return answer_call(self.preset, answer[:MAX_ANSWER_CHARS])

    @staticmethod
    def observed(result: dict[str, Any]) -> str:
        """A result as the chat shows it: the call, then its output."""
        head = str(result["call"]) or str(result["tool"])
        return f"Observation from `{head}`:\n{result['text']}"

    @abc.abstractmethod
    def _reset_plan(self, observation: dict[str, Any]) -> None:
        """Reset the offline planner."""

    @abc.abstractmethod
    def _start_chat(self, chat: ToolChat, observation: dict[str, Any]) -> None:
        """Open the chat: system prompt and question."""

    @abc.abstractmethod
    def _llm_turn(
        self, chat: ToolChat, observation: dict[str, Any], new: list[dict[str, Any]]
    ) -> ToolCall | None:
        """The LLM's call this turn (``None``: the reply was unusable)."""

    @abc.abstractmethod
    def _offline_call(self, observation: dict[str, Any]) -> ToolCall | None:
        """The planner's next call, or ``None`` to answer."""
