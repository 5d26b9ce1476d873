"""VideoScout's episodes in the Pacing env as a verl agent loop, registered as ``video_env_agent``.

verl (0.9.1) trains multi-turn agents through agent loops: per dataset row an
``AgentLoopBase.run`` builds the prompt's token ids, awaits ``server_manager.generate``
once per model turn, appends the environment's answer as more tokens and returns one
:class:`AgentLoopOutput` — the prompt, the response (the model's tokens and the env's, in
order), the response mask (1: the model's tokens, trained on; 0: the env's), the images
the sequence holds and the trajectory's reward. :class:`VideoEnvAgentLoop` plays the row's
question (``extra_info``: :func:`video_env.data.verl_rows.sample_of`) with
:class:`~policies.training.adapter.PacingChatEnv`: VideoScout's Think-Act prompt (system
prompt, the window's frames as images, the agent's notes, the question), each reply parsed
by the env's text action set, the env's rules, penalties and composite reward unchanged;
the env runs in this process or as a session of a ``video-env serve`` server
(``env_url``).

Tokens are built with verl's own Continuous Token builder (``ct_build_initial_tokens``,
``ct_merge_assistant_token``, ``ct_merge_context_msg``), so the image placeholders and
chat-template boundaries are what the trainer recomputes. Every frame is one image
(``{"type": "image"}`` in the messages, all of the sequence's images in ``image_data``),
as verl's own multi-turn loop passes images (it refuses videos in later turns).

**Not the paper's format** (``docs/fidelity.md``): one verl trajectory is one token
sequence, so the chat grows — each later turn is VideoScout's user turn (window, frames,
notes, question) appended after the reply, earlier frames staying in context — where the
paper sends a fresh chat per turn. The episode ends when the env ends it (an answer, the
error allowance, the turn cap) or when the response budget (``rollout.response_length``)
is spent: a reply cut by it is not sent to the env, and the episode ends unanswered
(``ended_by: response_budget``, reward 0).

The reward goes where verl's trainer reads it: ``reward_score`` (verl's ``rm_scores``, no
reward function needed), its parts and the episode's counts in
``extra_fields["reward_extra_info"]`` (logged per key), the env's record in
``extra_fields["video_env_record"]``. Needs the ``verl`` extra, in a venv of its own.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar
from uuid import uuid4

import numpy as np
from PIL import Image
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
from verl.utils.profiler import simple_timer

from policies.episode_settings import EpisodeSettings
from policies.training.adapter import PacingChatEnv, RemotePacingEnv, local_pacing_env
from policies.training.cli_common import RULES
from policies.videoscout.prompt import PromptLayout, message_parts
from video_env.backends.base import FrameBatch, VisionMessage
from video_env.data.verl_rows import AGENT_NAME, sample_of
from video_env.errors import ConfigError

__all__ = ["REWARD_KEYS", "VideoEnvAgentLoop", "image_messages", "message_images"]

_T = TypeVar("_T")

#: The keys of ``extra_fields["reward_extra_info"]``, the same for every trajectory.
REWARD_KEYS = ("acc", "fmt", "timing", "correct", "env_turns", "invalid_actions")

#: Why an episode ended when the response budget ran out before the env ended it.
BUDGET_END = "response_budget"


def image_messages(chat: list[VisionMessage]) -> list[dict[str, Any]]:
    """A VideoScout chat as verl's messages: every frame an ``{"type": "image"}`` part."""

    def images(batch: FrameBatch) -> list[dict[str, Any]]:
        pixels = np.asarray(batch.pixels(), dtype=np.uint8)
        return [{"type": "image", "image": Image.fromarray(frame)} for frame in pixels]

    return message_parts(chat, images)


def message_images(messages: list[dict[str, Any]]) -> list[Image.Image]:
    """The images of ``messages``, in order (what ``image_data`` carries)."""
    return [
        part["image"]
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if part.get("type") == "image"
    ]


@register(AGENT_NAME)
class VideoEnvAgentLoop(AgentLoopBase):
    """One Pacing episode per dataset row (see the module docstring).

    The keyword arguments come from the agent loop's entry in verl's
    ``agent_loop_config_path`` file (``examples/verl/agent_loop.yaml``); verl's own
    arguments (config, server manager, tokenizer, processor, dataset class) go to
    ``AgentLoopBase``.

    Args:
        rules: The Pacing rules' preset (``paper``, ``pixel-vlm``, ``cpu-smoke``).
        max_turns: Env steps after which the episode ends unanswered.
        max_new_tokens: Tokens per reply at most (less where the response budget is
            nearly spent).
        end_note: Where the prompt says that a window ends the video.
        question_first: The question and options before the frames.
        strict: Parse replies strictly (exactly the Think-Act format).
        env_url: A ``video-env serve`` Pacing server (frames, no sensors, the same
            questions and rules) instead of an env in this process.
        seed: Seed of every env reset.
        env_kwargs: Further Pacing-env arguments (e.g. ``{"perception": "simulated"}``).
        **kwargs: verl's arguments of ``AgentLoopBase``.
    """

    def __init__(
        self,
        *args: Any,
        rules: str = "paper",
        max_turns: int = 32,
        max_new_tokens: int = 4096,
        end_note: str = "window",
        question_first: bool = False,
        strict: bool = False,
        env_url: str | None = None,
        seed: int = 0,
        env_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if rules not in RULES:
            raise ConfigError(f"unknown pacing rules {rules!r}; known: {sorted(RULES)}")
        self.settings = EpisodeSettings(
            rules=RULES[rules](),
            layout=PromptLayout(end_note, bool(question_first)),
            max_turns=int(max_turns),
            max_new_tokens=int(max_new_tokens),
            strict=bool(strict),
            env_kwargs=dict(env_kwargs or {}),
        )
        self.make_env = RemotePacingEnv(env_url) if env_url else local_pacing_env
        self.seed = int(seed)
        self.response_length = int(self.rollout_config.response_length)
        self.stop_ids = {
            token
            for token in (
                self.tokenizer.eos_token_id,
                self.tokenizer.convert_tokens_to_ids("<|im_end|>"),
            )
            if isinstance(token, int) and token != self.tokenizer.unk_token_id
        }

    async def _off_loop(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run a blocking env call (decoding frames, a server's reply) off the event loop."""
        result: _T = await asyncio.get_running_loop().run_in_executor(
            None, functools.partial(fn, *args)
        )
        return result

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """Play the row's episode; its tokens, mask, images and reward.

        Args:
            sampling_params: verl's sampling parameters (``max_tokens`` is set per turn).
            **kwargs: The dataset row's fields (``extra_info`` names the question).

        Raises:
            ConfigError: If the row names no question of its source, or the env sends no
                frames.
        """
        sample = await self._off_loop(sample_of, kwargs.get("extra_info"))
        episode = PacingChatEnv(sample, self.settings, seed=self.seed, make_env=self.make_env)
        try:
            return await self._play(episode, sampling_params)
        finally:
            await self._off_loop(episode.close)

    async def _play(
        self, episode: PacingChatEnv, sampling_params: dict[str, Any]
    ) -> AgentLoopOutput:
        metrics: dict[str, Any] = {}
        messages = image_messages(await self._off_loop(episode.reset))
        images = message_images(messages)
        self._assert_mm_supported(bool(images))
        tokens = await self.ct_build_initial_tokens(messages, images=images)
        mask: list[int] = []
        logprobs: list[float] | None = None
        request_id = uuid4().hex  # one per episode: the server keeps its prefix cache
        replies = turns = 0  # the model's replies; the env's turns after the first
        while True:
            left = self.response_length - len(mask)
            output = await self._generate(
                request_id, tokens, images, sampling_params, left, metrics
            )
            reply = list(output.token_ids)
            if logprobs is None and output.log_probs:
                logprobs = [0.0] * len(mask)
            merged, mask, logprobs = await self.ct_merge_assistant_token(
                tokens, reply, mask, logprobs, assistant_logprobs=output.log_probs or None
            )
            tokens, replies = merged.token_ids, replies + 1
            if self._cut_by_budget(reply, left):
                await self._off_loop(episode.finish, BUDGET_END)
                break
            text = self.tokenizer.decode(reply, skip_special_tokens=True)
            try:
                step = await self._off_loop(episode.step, text)
            except ConnectionError:  # a lost server session: the episode scores 0, training goes on
                await self._off_loop(episode.finish, "lost_session")
                break
            if step.done:
                break
            if len(mask) >= self.response_length:  # no room for another reply
                await self._off_loop(episode.finish, BUDGET_END)
                break
            turn = image_messages(step.messages or [])[-1]  # the user turn; the system stays
            before = [*messages, {"role": "assistant", "content": text}]
            merged, grown, grown_logprobs = await self.ct_merge_context_msg(
                before, [*before, turn], tokens, mask, logprobs
            )
            if len(grown) >= self.response_length:  # the next turn leaves no room for a reply
                await self._off_loop(episode.finish, BUDGET_END)
                break
            messages = [*before, turn]
            tokens, mask, logprobs = merged.token_ids, grown, grown_logprobs
            images += message_images([turn])
            turns += 1
        # verl counts the chat's turns: the first user turn, each reply, each later user turn
        num_turns = 1 + replies + turns
        return self._output(episode, tokens, mask, logprobs, images, num_turns, metrics)

    async def _generate(
        self,
        request_id: str,
        tokens: list[int],
        images: list[Image.Image],
        sampling_params: dict[str, Any],
        left: int,
        metrics: dict[str, Any],
    ) -> Any:
        """One reply from verl's server: every image of the sequence, at most ``left`` tokens."""
        params = {**sampling_params, "max_tokens": min(self.settings.max_new_tokens, left)}
        with simple_timer("generate_sequences", metrics):
            output = await self.server_manager.generate(
                request_id=request_id,
                prompt_ids=tokens,
                sampling_params=params,
                image_data=list(images) or None,
                mm_processor_kwargs=self._get_mm_processor_kwargs(),
            )
        if output.num_preempted is not None:
            metrics["num_preempted"] = metrics.get("num_preempted", 0) + output.num_preempted
        return output

    def _cut_by_budget(self, reply: list[int], left: int) -> bool:
        """Whether the reply ran into the response budget: longer than it, or filling it unended."""
        if len(reply) > left:
            return True
        return len(reply) >= left and (not reply or reply[-1] not in self.stop_ids)

    def _output(
        self,
        episode: PacingChatEnv,
        tokens: list[int],
        mask: list[int],
        logprobs: list[float] | None,
        images: list[Image.Image],
        num_turns: int,
        metrics: dict[str, Any],
    ) -> AgentLoopOutput:
        """The trajectory as verl's output: response cut to the budget, reward and record."""
        record = dict(episode.record or {})
        parts = record.get("reward_parts") or {}
        info = {
            "acc": float(parts.get("acc", 0.0)),
            "fmt": float(parts.get("fmt", 0.0)),
            "timing": float(parts.get("timing", 0.0)),
            "correct": float(bool(record.get("correct"))),
            "env_turns": float(record.get("turns") or episode.turns),
            "invalid_actions": float(record.get("invalid_actions") or 0),
        }
        budget = self.response_length
        start = len(tokens) - len(mask)  # the response: the tokens the mask covers
        metrics.setdefault("num_preempted", -1)
        return AgentLoopOutput(
            prompt_ids=tokens[:start],
            response_ids=tokens[start:][:budget],
            response_mask=mask[:budget],
            response_logprobs=logprobs[:budget] if logprobs is not None else None,
            multi_modal_data={"images": images} if images else {},
            mm_processor_kwargs=self._get_mm_processor_kwargs(),
            reward_score=float(episode.reward),
            num_turns=num_turns,
            metrics=metrics,
            extra_fields={"reward_extra_info": info, "video_env_record": record},
        )
