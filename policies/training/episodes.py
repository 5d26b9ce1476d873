"""Running VideoScout episodes while keeping each turn's exact input and reply.

Training needs what the model saw and said at every env turn: the chat messages (system
prompt, window text, the frames as shown, memory and question) and the raw reply.
:class:`RecordingChat` wraps any :class:`~video_env.backends.base.VisionChat` and keeps
them; :func:`run_recorded_episode` runs one episode of the VideoScout policy with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from policies.episode_settings import EpisodeSettings
from policies.runner import run_episode
from policies.videoscout import VideoScoutPolicy
from video_env.actions.pacing import PacingActionSet
from video_env.actions.types import InvalidAction
from video_env.backends.base import ReplyGuide, VisionChat, VisionMessage
from video_env.backends.llm.base import Completion
from video_env.envs.pacing import PacingEnv
from video_env.metrics.cost import Cost
from video_env.types import VideoQA
from video_env.wrappers.text_actions import parse_text_action

__all__ = [
    "EpisodeRun",
    "RecordingChat",
    "Turn",
    "format_valid",
    "rewatch_rate",
    "run_recorded_episode",
]


def format_valid(reply: str) -> bool:
    """Whether ``reply`` is a complete Think-Act reply whose action parses."""
    action = parse_text_action(PacingActionSet(), reply)
    return not isinstance(action, InvalidAction) and bool(getattr(action, "well_formed", False))


def rewatch_rate(explored: Sequence[Sequence[Any]]) -> float:
    """The share of explored windows (``(start, end, kind)`` entries) that were rewatches."""
    return sum(entry[-1] == "rewatch" for entry in explored) / len(explored) if explored else 0.0


@dataclass(frozen=True)
class Turn:
    """One env turn as the model lived it.

    Attributes:
        messages: The chat the model was given (content parts: text and frame batches).
        reply: The model's raw reply.
        finish_reason: ``"stop"``, ``"length"`` (cut by the token cap) or ``None``.
        chunks_passed: Chunks the env's pointer had passed when the model replied (the
            ``M`` of the timing reward if this turn answers).
        tokens: Tokens the reply took (the completion's count).
        guide: The guide the reply was decoded under (``None``: free decoding).
        token_ids: The reply's token ids as sampled, where the model gave them.
    """

    messages: list[VisionMessage]
    reply: str
    finish_reason: str | None
    chunks_passed: int = 0
    tokens: int = 0
    guide: ReplyGuide | None = None
    token_ids: tuple[int, ...] | None = None


class RecordingChat:
    """A :class:`VisionChat` that forwards to ``inner`` and records every turn."""

    def __init__(self, inner: VisionChat) -> None:
        self.inner = inner
        self.accepts_guide = bool(getattr(inner, "accepts_guide", False))
        self.accepts_pattern_guide = bool(getattr(inner, "accepts_pattern_guide", False))
        self.name = inner.name
        self.simulated = inner.simulated
        self.pixel_vlm = bool(getattr(inner, "pixel_vlm", False))  # the episode's labels
        self.random_weights = bool(getattr(inner, "random_weights", False))
        self.usage: Cost = inner.usage
        self.turns: list[Turn] = []
        #: The guide the next turn is recorded (and scored) under, when the policy decodes
        #: it under a narrower one (an explored pace); ``None``: the call's own.
        self.scored_guide: ReplyGuide | None = None

    def chat(self, messages: Sequence[VisionMessage], **options: Any) -> Completion:
        """Forward the call as made (its guide too); keep ``(messages, reply, finish_reason)``."""
        reply = self.inner.chat(messages, **options)
        guide: ReplyGuide | None = self.scored_guide or options.get("guide")
        self.scored_guide = None
        self.turns.append(
            Turn(
                list(messages),
                reply.text,
                reply.finish_reason,
                tokens=reply.completion_tokens,
                guide=guide,
                token_ids=reply.token_ids,
            )
        )
        self.usage = self.inner.usage
        return reply


@dataclass(frozen=True)
class EpisodeRun:
    """An episode's record (``info["episode"]`` + policy costs) and its turns."""

    record: dict[str, Any]
    turns: list[Turn]

    @property
    def reward(self) -> float:
        """The terminal reward (0 for an episode that ended without answering)."""
        return float(self.record.get("reward") or 0.0)


class _ProgressRecordingPolicy(VideoScoutPolicy):
    """VideoScout, noting the chunks passed (from the observation) at each turn.

    With ``explore_pace`` > 0 (DAPO's rollouts), that share of its turns, drawn with
    ``seed``, is decoded without the answers wherever another action is legal, and
    recorded under the turn's full guide: scored there, the pace it read on at is
    rewarded or punished at the decision itself.
    """

    def __init__(
        self,
        vlm: RecordingChat,
        settings: EpisodeSettings,
        explore_pace: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__(vlm, **settings.policy_kwargs())
        self.recording = vlm
        self.chunks_passed: list[int] = []
        self.explore_pace = explore_pace
        self.rng = np.random.default_rng(seed)

    def reply_guide(self, observation: dict[str, Any], info: dict[str, Any]) -> ReplyGuide:
        """The turn's guide; on an explored turn, the one without the answers."""
        full = super().reply_guide(observation, info)
        if not self.explore_pace or self.rng.random() >= self.explore_pace:
            return full
        narrow = self.prompt.reply_guide(
            observation, info, format_guided=self.format_guided,
            format_chars=self.format_chars, answer=False,
        )  # fmt: skip
        if narrow != full:
            self.recording.scored_guide = full
        return narrow

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Note the progress, then act as VideoScout."""
        n_chunks = int(observation["n_chunks"][0])
        self.chunks_passed.append(round(float(observation["progress"][0]) * n_chunks))
        return super().act(observation, info)


def run_recorded_episode(
    model: VisionChat,
    sample: VideoQA,
    settings: EpisodeSettings,
    *,
    seed: int,
    explore_pace: float = 0.0,
) -> EpisodeRun:
    """One VideoScout episode of ``model`` on ``sample`` in a fresh Pacing env.

    Args:
        model: The chat model driving the policy.
        sample: The question (its ``meta["reference_chunk"]`` is the timing reward's T).
        settings: How the episode is played (rules, prompt, turn cap, decoding, env).
        seed: Seed of the env's reset (and of the explored turns' draws).
        explore_pace: Share of turns decoded without the answers where another action
            is legal, recorded under the full guide (needs guided decoding).
    """
    chat = RecordingChat(model)
    policy = _ProgressRecordingPolicy(chat, settings, explore_pace, seed)
    env = PacingEnv([sample], **settings.pacing_env_kwargs())
    try:
        record = run_episode(
            env, policy, seed=seed, options={"sample": sample}, max_steps=settings.max_turns
        )
    finally:
        env.close()
    turns = [
        replace(turn, chunks_passed=passed)
        for turn, passed in zip(chat.turns, policy.chunks_passed, strict=False)
    ]
    return EpisodeRun(record, turns)
