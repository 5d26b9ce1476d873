"""The Pacing env as a turn-based chat environment, for an RL engine's multi-turn loop.

Distributed RL engines (verl's agent loop, TRL's rollout hook, verl-tool's tool server)
own generation: they ask an environment for the next prompt, generate the reply on their
inference servers, hand the reply back and read a reward. :class:`PacingChatEnv` is that
environment for VideoScout: ``reset()`` returns the first turn's chat (system prompt,
window text, frames, memory and question, rendered by
:class:`~policies.videoscout.prompt.VideoScoutPrompt`), ``step(reply)`` parses the raw
reply with the env's text action set and returns the next turn's chat, the step reward
and whether the episode is over. Each turn is a fresh single-turn chat (VideoScout's
memory replaces the history), so an engine trains on (prompt, reply) pairs per turn with
the trajectory's advantage (:mod:`policies.training.dapo`). The env runs in this process
or on a server (:class:`RemotePacingEnv`): one factory, :class:`EpisodeEnvFactory`, makes
either. :func:`engine_messages` turns a chat into the placeholder-plus-arrays form engines
take (``{"type": "video"}`` parts and the frames).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from policies.episode_settings import EpisodeSettings
from policies.videoscout.prompt import message_parts
from video_env.backends.base import FrameBatch, VisionMessage
from video_env.backends.llm.base import Completion
from video_env.envs.pacing import PacingEnv
from video_env.errors import ConfigError
from video_env.types import VideoQA

__all__ = [
    "ChatStep",
    "EpisodeEnvFactory",
    "PacingChatEnv",
    "RemotePacingEnv",
    "engine_messages",
    "local_pacing_env",
    "server_env_kwargs",
]


class EpisodeEnvFactory(Protocol):
    """Makes the env of one episode: in this process, or a session on a server."""

    def __call__(self, sample: VideoQA, env_kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """An env that plays ``sample``, and the ``reset`` options that pick it.

        Args:
            sample: The question.
            env_kwargs: The Pacing env's arguments the episode's settings give.
        """
        ...


def local_pacing_env(sample: VideoQA, env_kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A Pacing env in this process over ``sample`` alone (the default factory)."""
    return PacingEnv([sample], **env_kwargs), {"sample": sample}


@dataclass(frozen=True)
class RemotePacingEnv:
    """Episodes in sessions of a Pacing server (``video-env serve``), by question id.

    The server holds its own env arguments: it must serve the same questions under the
    same rules, with frames and no sensors (:func:`server_env_kwargs`).

    Attributes:
        base_url: The server, e.g. ``http://127.0.0.1:8000``.
    """

    base_url: str

    def __call__(self, sample: VideoQA, env_kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """A new session of the server; only the question's id travels."""
        from video_env.serving.client import RemoteVideoEnv

        return RemoteVideoEnv(self.base_url, "PacingEnv"), {"sample_id": sample.id}


def server_env_kwargs(
    samples: Sequence[VideoQA] | str, settings: EpisodeSettings | None = None
) -> dict[str, Any]:
    """The arguments a Pacing server needs to serve these questions for these episodes."""
    env = (settings or EpisodeSettings()).pacing_env_kwargs()
    return {"dataset": samples if isinstance(samples, str) else list(samples), **env}


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
        settings: How the episode is played: rules, prompt layout, turn cap, parsing, and
            the env's further arguments (default: the paper's).
        seed: Seed of the env's reset.
        make_env: Where the env runs (default: in this process; :class:`RemotePacingEnv`:
            on a server).
    """

    def __init__(
        self,
        sample: VideoQA,
        settings: EpisodeSettings | None = None,
        *,
        seed: int = 0,
        make_env: EpisodeEnvFactory = local_pacing_env,
    ) -> None:
        self.sample = sample
        self.seed = seed
        self.settings = settings or EpisodeSettings()
        self.max_turns = self.settings.max_turns
        self.prompt = self.settings.prompt()
        self.env, self._reset_options = make_env(sample, self.settings.pacing_env_kwargs())
        self.turns = 0
        self.done = True
        self.reward = 0.0
        self.record: dict[str, Any] | None = None
        self._observation: dict[str, Any] = {}

    def reset(self) -> list[VisionMessage]:
        """Start the episode; the first turn's chat."""
        self._observation, _ = self.env.reset(seed=self.seed, options=self._reset_options)
        if "frames" not in self._observation:
            raise ConfigError(
                "the env sends no frames: VideoScout's chat needs pixel observations (a "
                "server: serve with --pixel-observations)"
            )
        self.turns, self.done, self.reward, self.record = 0, False, 0.0, None
        return self.prompt.messages(self._observation)

    def step(self, reply: str | Completion) -> ChatStep:
        """Apply the model's raw reply; the next chat, the reward, and whether it is over."""
        if self.done:
            raise ConfigError("the episode is over; call reset()")
        text = reply.text if isinstance(reply, Completion) else reply
        return self.step_action(self.prompt.parse(text))

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
        messages = None if self.done else self.prompt.messages(self._observation)
        return ChatStep(messages, float(reward), self.done, dict(info))

    def finish(self, reason: str = "max_steps") -> float:
        """End the episode if it is still running (no answer: reward 0); its reward.

        A remote session lost before it could be ended (a ``ConnectionError``, such as
        ``RemoteSessionError``) scores 0 and is recorded as ``lost_session``: one lost
        episode must not stop a training run.
        """
        if not self.done:
            try:
                self.record = self.env.abandon(reason)
            except ConnectionError as exc:
                self.record = {"ended_by": "lost_session", "error": str(exc)[:500], "reward": 0.0}
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
    frames: list[np.ndarray[Any, np.dtype[np.uint8]]] = []
    times: list[list[float]] = []

    def placeholder(batch: FrameBatch) -> list[dict[str, Any]]:
        frames.append(np.asarray(batch.pixels(), dtype=np.uint8))
        times.append([float(t) for t in batch.times])
        return [{"type": "image" if len(batch) == 1 else "video"}]

    return message_parts(messages, placeholder), frames, times
