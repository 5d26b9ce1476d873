"""A VLM prompted in a trained tool-calling system's own dialect, playing its Tools preset.

One class for the five trained systems (LongVT, VideoZoomer, TimeSearch-R, FrameThinker,
Video-MTR): the preset names the :class:`~policies.tool_dialects.dialects.Dialect` that
writes the system prompt, shows each result's frames as images after the system's labels
and keeps the multi-turn chat as the system does. The model's raw reply is the action,
parsed by the preset's own :class:`~video_env.actions.tools.ToolsActionSet` through
:func:`~video_env.wrappers.text_actions.parse_text_action`: a reply the system's parser
would not read is an invalid action under the env's rules. So a user with a released
checkpoint runs it by naming it: ``longvt-vlm:transformers:PATH``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from policies.base import Policy
from policies.tool_agents.calls import preset_for
from policies.tool_dialects.dialects import Dialect, Parts, dialect
from policies.tool_dialects.shown import Shown, result_frames
from policies.videoscout.policy import resolve_vision_chat
from video_env.actions.tools import ToolsActionSet
from video_env.actions.types import ToolCall
from video_env.backends.base import VisionChat, VisionMessage
from video_env.envs.tool_presets import resolve_preset
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost
from video_env.wrappers.text_actions import parse_text_action

__all__ = ["ToolDialectPolicy", "make_dialect_policy"]


class ToolDialectPolicy(Policy):
    """A :class:`VisionChat` model playing a Tools preset in its system's dialect.

    Args:
        vlm: The model (any :class:`VisionChat`: transformers, an OpenAI-compatible server).
        preset: The system: ``longvt``, ``videozoomer``, ``timesearch-r``, ``framethinker``
            or ``video-mtr`` (:data:`~policies.tool_dialects.dialects.DIALECTS`).
        strict: Parse replies strictly (one call, nothing else but a ``<think>`` block).
        max_new_tokens: Generation budget per turn.
        temperature: Sampling temperature (0: greedy).
        name: Name in result tables (default ``<preset>-vlm[<model>]``).

    The env runs the preset with pixel observations (``env_kwargs``); the model reads the
    frames itself, so its labels join the episode's (``perceivers``).
    """

    env_kinds = ("tools",)
    offline = False

    def __init__(
        self,
        vlm: VisionChat,
        preset: str,
        *,
        strict: bool = False,
        max_new_tokens: int = 1024,
        temperature: float = 0.0,
        name: str | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(vlm, VisionChat):
            raise ConfigError(f"{preset}-vlm needs a VisionChat model, got {type(vlm).__name__}")
        if max_new_tokens < 1 or temperature < 0:
            raise ConfigError("max_new_tokens must be >= 1 and temperature >= 0")
        self.dialect: Dialect = dialect(preset)
        self.preset = resolve_preset(preset)
        self.action_set = ToolsActionSet(self.preset)
        self.vlm = vlm
        self.strict = strict
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.name = name or f"{preset}-vlm[{vlm.name}]"
        self.env_kwargs: Mapping[str, Mapping[str, Any]] = MappingProxyType(
            {"tools": MappingProxyType({"preset": preset, "pixel_observations": True})}
        )
        self.system = ""
        self.history: list[VisionMessage] = []
        self.last_messages: list[VisionMessage] = []
        self.last_reply = ""
        self._seen = 0
        self._call: ToolCall | None = None

    @property
    def perceivers(self) -> tuple[Any, ...]:
        """The model: it reads the frames itself."""
        return (self.vlm,)

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Start a new chat.

        Raises:
            ConfigError: When the env plays another preset than the dialect's.
        """
        preset_for(self.preset, info.get("legal_actions", ()))
        self.system = ""
        self.history = []
        self._seen = 0
        self._call = None

    def user_turn(self, observation: dict[str, Any], info: dict[str, Any]) -> Parts:
        """The user turn showing what happened since the last reply, in the dialect."""
        results = tuple(observation["results"])
        new = results[self._seen :] if len(results) > self._seen else results[-1:]
        self._seen = len(results)
        result = new[-1] if new else None
        error = str(observation["last_action_error"])
        shown = Shown(
            observation, info, self.preset, result, result_frames(observation, result), error,
            self._call,
        )  # fmt: skip
        if not self.history:
            self.system = self.dialect.system(shown)
            return self.dialect.opening(shown)
        return self.dialect.error(shown) if error else self.dialect.result(shown)

    def messages(self, user: Parts) -> list[VisionMessage]:
        """The chat sent to the model: system, the kept past exchanges, then ``user``."""
        past = self.history
        if self.dialect.window is not None:
            past = past[len(past) - 2 * self.dialect.window :] if self.dialect.window else []
        head: list[VisionMessage] = [{"role": "system", "content": self.system}]
        return [*head, *past, {"role": "user", "content": list(user)}]

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Ask the model; its raw reply (cut where the system stops), parsed by the preset."""
        user = self.user_turn(observation, info)
        self.last_messages = self.messages(user)
        reply = self.vlm.chat(
            self.last_messages, max_new_tokens=self.max_new_tokens, temperature=self.temperature
        )
        self._own_usage = self._own_usage + Cost(
            llm_calls=1,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            money_usd=reply.cost_usd,
        )
        text = reply.text
        stop = self.dialect.stop
        if stop and stop in text:
            text = text[: text.index(stop) + len(stop)]
        self.last_reply = text
        self.history += [
            {"role": "user", "content": list(user)},
            {"role": "assistant", "content": text},
        ]
        action = parse_text_action(self.action_set, text, strict=self.strict)
        if isinstance(action, ToolCall):
            self._call = action
        return action


def make_dialect_policy(preset: str, spec: str, **settings: Any) -> ToolDialectPolicy:
    """``<preset>-vlm:SPEC`` in the registry: ``longvt-vlm:transformers:PATH``, ``...:openai:M``.

    Raises:
        ConfigError: For a missing model spec or settings the policy does not take.
    """
    name = f"{preset}-vlm:{spec}"
    try:
        inspect.signature(ToolDialectPolicy).bind(None, preset, **settings)
    except TypeError as exc:
        raise ConfigError(f"policy {name!r}: {exc}") from None
    if not spec.partition(":")[2]:
        raise ConfigError(
            f"{preset}-vlm needs a model: {preset}-vlm:transformers:PATH or "
            f"{preset}-vlm:openai:MODEL (the released checkpoint), got {spec!r}"
        )
    return ToolDialectPolicy(resolve_vision_chat(spec), preset, name=name, **settings)
