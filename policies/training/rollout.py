"""Multi-turn rollouts of the policy being trained, in the Pacing env, G per question.

:class:`PolicyChat` is a :class:`~video_env.backends.base.VisionChat` over a model held in
memory (the one being optimised): it samples through the same ``hf_generation`` path as
:class:`~video_env.backends.transformers_vlm.TransformersVLM`, so rollouts see the inputs
inference sees. :func:`rollout_group` plays ``G`` episodes of one question with it and
returns them as :class:`Trajectory` objects (the turns to train on and the env's
composite reward ``R = r_acc + r_fmt + r_timing``; an episode that never answers gets 0).
The group's first turns, when identical, are one call of ``G`` rows
(:class:`~policies.training.group_chat.SharedTurnChat`: one vision pass, one prefill), and
the model's vision tower may serve frames it has seen from a
:class:`~video_env.backends.vision_cache.VisionFeatureCache`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from policies.episode_settings import EpisodeSettings
from policies.training.episodes import EpisodeRun, run_recorded_episode
from policies.training.group_chat import SharedTurnChat
from policies.training.turn_inputs import TurnExample, conversation_from_messages
from video_env._optional import require
from video_env._seeding import stable_seed
from video_env.backends.base import ReplyGuide, VisionMessage
from video_env.backends.hf_generation import generate
from video_env.backends.llm.base import Completion
from video_env.backends.vision_cache import VisionFeatureCache, install_vision_cache
from video_env.metrics.cost import Cost
from video_env.types import VideoQA

__all__ = ["PolicyChat", "Trajectory", "rollout_group", "trajectory_from_run"]


@dataclass(frozen=True)
class Trajectory:
    """One sampled trajectory: its turns (prompt + reply each) and its reward.

    Attributes:
        turns: The turns to train on.
        reward: The env's composite reward (0 without an answer).
        record: The episode record (``correct`` is the answer's correctness).
        reply_tokens: Tokens of each reply.
        truncated: Whether some reply was cut by the token cap.
    """

    turns: list[TurnExample]
    reward: float
    record: dict[str, Any]
    reply_tokens: tuple[int, ...] = ()
    truncated: bool = False

    @property
    def correct(self) -> bool:
        """Whether the episode answered correctly (no answer, or ungraded: no)."""
        return bool(self.record.get("correct"))


class PolicyChat:
    """A :class:`VisionChat` over an in-memory transformers VLM (the policy in training).

    Args:
        model: A ``transformers`` image-text-to-text model.
        processor: Its processor.
        device: Where the model is.
        min_pixels: Qwen pixel budget per frame (as ``TransformersVLM``'s).
        max_pixels: Qwen pixel budget per frame.
        vision_cache: Where the model's vision tower keeps the features of frames it has
            encoded (installed on the model; None: no cache).
        share_first_turn: Sample a group's identical first turns as one call of ``G``
            rows (:func:`rollout_group`); off, each episode calls the model itself.
    """

    simulated = False
    #: ``chat`` takes a :class:`~video_env.backends.base.ReplyGuide` (guided rollouts).
    accepts_guide = True

    def __init__(
        self,
        model: Any,
        processor: Any,
        device: str = "cpu",
        min_pixels: int | None = None,
        max_pixels: int | None = None,
        vision_cache: VisionFeatureCache | None = None,
        share_first_turn: bool = True,
    ) -> None:
        self.model = model
        self.processor = processor
        self.device = device
        self.min_pixels = min_pixels
        self.max_pixels = max_pixels
        self.name = "policy-in-training"
        self.usage = Cost()
        self._torch = require("torch", "models", "DAPO rollouts")
        self.share_first_turn = share_first_turn
        self.vision_cache = (
            install_vision_cache(model, vision_cache) if vision_cache is not None else None
        )

    def chat(
        self,
        messages: Sequence[VisionMessage],
        *,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        guide: ReplyGuide | None = None,
    ) -> Completion:
        """Sample a reply (greedy at temperature 0) from the current weights (guided if given)."""
        return self.chat_n(
            messages, 1, max_new_tokens=max_new_tokens, temperature=temperature, guide=guide
        )[0]

    def chat_n(
        self,
        messages: Sequence[VisionMessage],
        n: int,
        *,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        guide: ReplyGuide | None = None,
    ) -> list[Completion]:
        """``n`` replies to ``messages``: the prompt prefilled once, the rows decoded together."""
        start = time.perf_counter()
        conversation = conversation_from_messages(messages, self.min_pixels, self.max_pixels)
        was_training = self.model.training
        self.model.eval()
        try:
            rows, _ = generate(
                self.model,
                self.processor,
                self._torch,
                [conversation],
                max_new_tokens=max_new_tokens,
                temperature=temperature,
                device=self.device,
                guide=guide,
                scores=False,
                rows_per_prompt=n,
            )
        finally:
            self.model.train(was_training)
        visual = sum(gen.n_visual_tokens for gen in rows)
        self.usage = self.usage + Cost(vlm_calls=n, visual_tokens=visual)
        latency = time.perf_counter() - start
        return [
            Completion(
                text=gen.text,
                model=self.name,
                prompt_tokens=gen.prompt_tokens,
                completion_tokens=len(gen.token_ids or ()),
                finish_reason=gen.finish_reason,
                latency_s=latency,
                token_ids=gen.token_ids,
            )
            for gen in rows
        ]

    def example(
        self,
        messages: Sequence[VisionMessage],
        reply: str,
        guide: ReplyGuide | None = None,
        reply_ids: Sequence[int] | None = None,
    ) -> TurnExample:
        """A turn to train on, with this chat's pixel budgets (its guide's pattern, its ids)."""
        conversation = conversation_from_messages(messages, self.min_pixels, self.max_pixels)
        pattern = guide.regex() if guide is not None and guide.patterns else None
        ids = tuple(reply_ids) if reply_ids is not None else None
        return TurnExample(conversation, reply, pattern, ids)


def trajectory_from_run(chat: PolicyChat, run: EpisodeRun) -> Trajectory:
    """The turns of an episode as training examples (the sampled ids), with the env's reward."""
    turns = [chat.example(t.messages, t.reply, t.guide, t.token_ids) for t in run.turns]
    return Trajectory(
        turns,
        run.reward,
        run.record,
        reply_tokens=tuple(t.tokens for t in run.turns),
        truncated=any(t.finish_reason == "length" for t in run.turns),
    )


def rollout_group(
    chat: PolicyChat,
    sample: VideoQA,
    settings: EpisodeSettings,
    *,
    group_size: int,
    seed: int,
    explore_pace: float = 0.0,
) -> list[Trajectory]:
    """``group_size`` episodes of ``sample`` sampled from the policy (one DAPO group).

    With ``chat.share_first_turn`` the first call samples ``group_size`` replies at once,
    which the other episodes' first turns take when their prompt is the same (an explored
    turn's guide differs: it is its own call). ``explore_pace``: see
    :func:`~policies.training.episodes.run_recorded_episode`.
    """
    shared = SharedTurnChat(chat) if chat.share_first_turn else None
    if shared is not None:
        shared.expect(group_size)
    group = []
    for i in range(group_size):
        episode_seed = stable_seed(seed, sample.id, i) % 2**31
        run = run_recorded_episode(
            shared or chat, sample, settings, seed=episode_seed, explore_pace=explore_pace
        )
        group.append(trajectory_from_run(chat, run))
    return group
