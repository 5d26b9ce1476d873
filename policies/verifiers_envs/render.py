"""Observations as chat messages (OpenAI content parts: text, and frames as images).

How an env's episode is shown to a chat model is its :class:`EnvChat`, which
:func:`env_chat` picks by the env's class, the one place an env kind is special-cased:

- :class:`TextChat`, any env kind: the system prompt of its text action set, then each
  observation as the env renders it (``observation_text``, with ``observation_images`` as
  images); the chat grows turn by turn.
- :class:`VideoScoutChat`, the Pacing env: VideoScout's prompt, a fresh chat every turn
  (system prompt, the window's frames, the agent's notes, the question), as
  ``docs/fidelity.md`` describes.

The verifiers environments and the lmms-eval agentic task both render through it; each
says how a turn's frames become content parts (``frame_parts``: data URLs, or placeholders
beside images handed over separately).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from policies.episode_settings import EpisodeSettings
from policies.videoscout.prompt import message_parts
from video_env.backends.base import FrameBatch
from video_env.envs.pacing import PacingEnv
from video_env.envs.pacing_rules import PacingRules
from video_env.envs.text_hooks import TextAgentHooks
from video_env.serving.images import encode_frames

__all__ = ["EnvChat", "FrameParts", "TextChat", "VideoScoutChat", "env_chat", "image_url_parts"]

#: Renders one turn's frames (``uint8[H, W, 3]``) as content parts.
FrameParts = Callable[[Sequence[np.ndarray]], list[dict[str, Any]]]


def image_url_parts(frames: Sequence[np.ndarray]) -> list[dict[str, Any]]:
    """Frames as OpenAI ``image_url`` parts (JPEG ``data:`` URLs)."""
    urls = encode_frames(np.stack(frames), "jpeg") if len(frames) else []
    return [{"type": "image_url", "image_url": {"url": url}} for url in urls]


class EnvChat(abc.ABC):
    """How an env's episode is shown to a chat model (see the module docstring).

    Args:
        env_kwargs: The env's arguments this chat needs (what an episode's env is built with).
        shows_images: Whether the chat may show frames (else a caller need not ask).
    """

    #: Whether every turn is a fresh chat (the observation carries the agent's notes)
    #: rather than the chat growing by one user turn per observation.
    fresh_each_turn: ClassVar[bool] = False

    def __init__(self, env_kwargs: Mapping[str, Any], *, shows_images: bool = True) -> None:
        self.env_kwargs = dict(env_kwargs)
        self.shows_images = shows_images

    @abc.abstractmethod
    def first_messages(
        self,
        env: TextAgentHooks,
        observation: dict[str, Any],
        frame_parts: FrameParts = image_url_parts,
    ) -> list[dict[str, Any]]:
        """The first turn's chat: the system prompt and the first observation.

        Args:
            env: The env that returned ``observation`` (or one of its kind and settings).
            observation: The observation.
            frame_parts: How the frames become content parts.
        """

    @abc.abstractmethod
    def next_messages(
        self,
        env: TextAgentHooks,
        observation: dict[str, Any],
        frame_parts: FrameParts = image_url_parts,
    ) -> list[dict[str, Any]]:
        """What follows the model's reply: a fresh chat, or one more user turn.

        Args:
            env: The env that returned ``observation`` (or one of its kind and settings).
            observation: The observation.
            frame_parts: How the frames become content parts.
        """


class TextChat(EnvChat):
    """Any env kind through its text-agent hooks; the chat grows turn by turn."""

    def first_messages(
        self,
        env: TextAgentHooks,
        observation: dict[str, Any],
        frame_parts: FrameParts = image_url_parts,
    ) -> list[dict[str, Any]]:
        """The env's system prompt, then the observation (text, and frames if any)."""
        system = {"role": "system", "content": env.system_prompt()}
        return [system, *self.next_messages(env, observation, frame_parts)]

    def next_messages(
        self,
        env: TextAgentHooks,
        observation: dict[str, Any],
        frame_parts: FrameParts = image_url_parts,
    ) -> list[dict[str, Any]]:
        """One user turn: the observation's text, then its frames."""
        text = env.observation_text(observation)
        frames = env.observation_images(observation) if self.shows_images else []
        if not frames:
            return [{"role": "user", "content": text}]
        return [{"role": "user", "content": [{"type": "text", "text": text}, *frame_parts(frames)]}]


class VideoScoutChat(EnvChat):
    """The Pacing env in VideoScout's prompt: a fresh chat every turn.

    Args:
        settings: The episode's settings: rules, prompt layout, further env arguments.
    """

    fresh_each_turn = True

    def __init__(self, settings: EpisodeSettings) -> None:
        super().__init__(settings.pacing_env_kwargs())
        self.prompt = settings.prompt()

    def first_messages(
        self,
        env: TextAgentHooks,
        observation: dict[str, Any],
        frame_parts: FrameParts = image_url_parts,
    ) -> list[dict[str, Any]]:
        """VideoScout's chat of the turn (it reads the observation alone)."""
        return self.next_messages(env, observation, frame_parts)

    def next_messages(
        self,
        env: TextAgentHooks,
        observation: dict[str, Any],
        frame_parts: FrameParts = image_url_parts,
    ) -> list[dict[str, Any]]:
        """VideoScout's chat of the turn (it reads the observation alone)."""

        def batch_parts(batch: FrameBatch) -> list[dict[str, Any]]:
            return frame_parts(list(batch.pixels()))

        return message_parts(self.prompt.messages(observation), batch_parts)


def env_chat(
    env_class: type[TextAgentHooks],
    env_kwargs: Mapping[str, Any] | None = None,
    rules: PacingRules | None = None,
) -> EnvChat:
    """The chat an env class is shown in: VideoScout's for Pacing, else :class:`TextChat`.

    Args:
        env_class: The env's class (``ENV_CLASSES[kind]``).
        env_kwargs: The env's further arguments.
        rules: Pacing's rules (default: the paper's); other kinds ignore them.
    """
    kwargs = dict(env_kwargs or {})
    if issubclass(env_class, PacingEnv):
        return VideoScoutChat(EpisodeSettings(rules=rules or PacingRules(), env_kwargs=kwargs))
    overrides = env_class.observation_images is not TextAgentHooks.observation_images
    return TextChat(kwargs, shows_images=overrides)
