"""The Pacing env as a turn-based chat environment, for an RL engine's multi-turn loop.

Distributed RL engines (verl's agent loop, TRL's rollout hook, verl-tool's tool server)
own generation: they ask an environment for the next prompt, generate the reply on their
inference servers, hand the reply back and read a reward. :class:`PacingChatEnv` is that
environment for VideoScout: ``reset()`` returns the first turn's chat (system prompt,
window text, frames, memory and question, exactly as :class:`~policies.videoscout.
VideoScoutPolicy` builds it), ``step(reply)`` parses the raw reply with the env's text
action set and returns the next turn's chat, the step reward and whether the episode is
over. Each turn is a fresh single-turn chat (VideoScout's memory replaces the history),
so an engine trains on (prompt, reply) pairs per turn with the trajectory's advantage
(:mod:`policies.training.dapo`). :func:`engine_messages` turns a chat into the
placeholder-plus-arrays form engines take (``{"type": "video"}`` parts and the frames).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from policies.videoscout import VideoScoutPolicy
from video_env.backends.base import FrameBatch, VisionMessage
from video_env.backends.llm.base import Completion
from video_env.envs.pacing import PacingEnv
from video_env.envs.pacing_rules import PacingRules
from video_env.envs.rules_record import DEFAULT_LAYOUT, PromptLayout
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost
from video_env.types import VideoQA
from video_env.wrappers.text_actions import parse_text_action

__all__ = ["ChatStep", "EngineModelSlot", "PacingChatEnv", "engine_messages"]


class EngineModelSlot:
    """The policy's model slot: an engine generates the replies, never this object."""

    name = "rl-engine"
    simulated = False
    usage = Cost()

    def chat(self, messages: Any, *, max_new_tokens: int = 512, temperature: float = 0.0) -> Any:
        """Never generates: the engine does.

        Raises:
            ConfigError: Always.
        """
        raise ConfigError("PacingChatEnv does not generate; pass the engine's reply to step()")


@dataclass(frozen=True)
class ChatStep:
    """What ``step(reply)`` returns.

    Attributes:
        messages: The next turn's chat (``None`` once the episode is over).
        reward: The env's reward for this step (the composite reward on answering,
            ``-penalty`` for an invalid reply, else 0).
        done: Whether the episode is over (answered, out of error allowance, or turn cap).
        info: The env's ``info`` (``info["episode"]`` at the end).
    """

    messages: list[VisionMessage] | None
    reward: float
    done: bool
    info: dict[str, Any]


class PacingChatEnv:
    """One VideoScout episode as a chat environment (see the module docstring).

    Args:
        sample: The question (``meta["reference_chunk"]``: the timing reward's T).
        rules: Pacing rules (default: the paper's).
        seed: Seed of the env's reset.
        max_turns: Turns after which the episode ends without an answer (reward 0).
        strict: Parse replies strictly.
        env_kwargs: Further Pacing-env arguments.
        layout: VideoScout's prompt layout (its end note and the question's place).
    """

    def __init__(
        self,
        sample: VideoQA,
        *,
        rules: PacingRules | None = None,
        seed: int = 0,
        max_turns: int = 32,
        strict: bool = False,
        env_kwargs: dict[str, Any] | None = None,
        layout: PromptLayout = DEFAULT_LAYOUT,
    ) -> None:
        self.sample = sample
        self.seed = seed
        self.max_turns = max_turns
        self.policy = VideoScoutPolicy(
            EngineModelSlot(),
            rules=rules,
            strict=strict,
            **layout.policy_kwargs(),
        )
        kwargs = {**self.policy.env_kwargs["pacing"], **(env_kwargs or {})}
        self.env = PacingEnv([sample], **kwargs)
        self.turns = 0
        self.done = True
        self.reward = 0.0
        self.record: dict[str, Any] | None = None
        self._observation: dict[str, Any] = {}

    def reset(self) -> list[VisionMessage]:
        """Start the episode; the first turn's chat."""
        self._observation, _ = self.env.reset(seed=self.seed, options={"sample": self.sample})
        self.turns, self.done, self.reward, self.record = 0, False, 0.0, None
        return self.policy.messages(self._observation)

    def step(self, reply: str | Completion) -> ChatStep:
        """Apply the model's raw reply; the next chat, the reward, and whether it is over."""
        if self.done:
            raise ConfigError("the episode is over; call reset()")
        text = reply.text if isinstance(reply, Completion) else reply
        return self.step_action(parse_text_action(self.policy.action_set, text, self.policy.strict))

    def step_action(self, action: Any) -> ChatStep:
        """Apply an already-built action (a Pacing action dataclass or ``InvalidAction``).

        For engines whose replies are structured (tool calls) rather than text; the env
        validates the action under its rules exactly as a parsed reply.
        """
        if self.done:
            raise ConfigError("the episode is over; call reset()")
        self._observation, reward, terminated, truncated, info = self.env.step(action)
        self.turns += 1
        over_cap = self.turns >= self.max_turns and not (terminated or truncated)
        self.done = bool(terminated or truncated or over_cap)
        if self.done:
            if over_cap:
                self.record = self.env.abandon("max_steps")
            else:
                self.record = dict(info["episode"])
            self.reward = float(self.record.get("reward") or 0.0)
        messages = None if self.done else self.policy.messages(self._observation)
        return ChatStep(messages, float(reward), self.done, dict(info))

    def finish(self, reason: str = "max_steps") -> float:
        """End the episode if it is still running (no answer: reward 0); its reward."""
        if not self.done:
            self.record = self.env.abandon(reason)
            self.reward = float(self.record.get("reward") or 0.0)
            self.done = True
        return self.reward

    def close(self) -> None:
        """Close the env."""
        self.env.close()


def engine_messages(
    messages: list[VisionMessage],
) -> tuple[list[dict[str, Any]], list[np.ndarray[Any, np.dtype[np.uint8]]], list[list[float]]]:
    """A chat as engines take it: ``{"type": "video"}`` (or ``"image"``) placeholders.

    Returns:
        The messages with text parts and placeholders, the frames of each placeholder
        (``uint8[N, H, W, 3]``, as shown) and their timestamps, in order.
    """
    out: list[dict[str, Any]] = []
    frames: list[np.ndarray[Any, np.dtype[np.uint8]]] = []
    times: list[list[float]] = []
    for message in messages:
        content = message.get("content", "")
        if isinstance(content, str):
            out.append({"role": message["role"], "content": content})
            continue
        parts: list[dict[str, Any]] = []
        for part in content:
            if isinstance(part, FrameBatch):
                parts.append({"type": "image" if len(part) == 1 else "video"})
                frames.append(np.asarray(part.pixels(), dtype=np.uint8))
                times.append([float(t) for t in part.times])
            else:
                parts.append({"type": "text", "text": str(part)})
        out.append({"role": message["role"], "content": parts})
    return out, frames, times
