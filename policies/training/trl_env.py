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
from typing import Any

from policies.episode_settings import EpisodeSettings
from policies.training.adapter import EpisodeEnvFactory, PacingChatEnv, local_pacing_env
from policies.videoscout.tool_calls import (
    TASK,
    TOOL_ACTIONS,
    PacingTools,
    answer_action,
    rewatch_action,
    speed_action,
    tool_action,
    tool_content,
    tool_system_prompt,
)
from video_env._optional import require
from video_env.envs.pacing_rules import PacingRules
from video_env.errors import ConfigError
from video_env.types import VideoQA

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


class PacingToolEnv(PacingTools):
    """One rollout's Pacing episode, with the actions as TRL tools.

    Args:
        samples: The questions by id (``meta["reference_chunk"]``: the timing reward's T).
        settings: How episodes are played: rules, the tool results' prompt layout, the
            env steps after which an episode ends without an answer (default: the paper's).
        seed: Seed of every env reset.
        make_env: Where the episodes run (default: in this process;
            :class:`~policies.training.adapter.RemotePacingEnv`: on a server).

    Attributes:
        episode: The current episode (``None`` before the first ``reset``).
        actions: The actions applied in the current episode, in order.
        resets: Episodes started by this instance.
        steps: Env steps taken by this instance (all episodes).
    """

    def __init__(
        self,
        samples: Mapping[str, VideoQA],
        settings: EpisodeSettings | None = None,
        *,
        seed: int = 0,
        make_env: EpisodeEnvFactory = local_pacing_env,
    ) -> None:
        self.samples = samples
        self.settings = settings or EpisodeSettings()
        self.seed = seed
        self.make_env = make_env
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
            self.samples[sample_id], self.settings, seed=self.seed, make_env=self.make_env
        )
        self.actions = []
        self.resets += 1
        return tool_content(self.episode.reset())

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


def pacing_env_factory(
    samples: Sequence[VideoQA],
    settings: EpisodeSettings | None = None,
    *,
    seed: int = 0,
    make_env: EpisodeEnvFactory = local_pacing_env,
) -> Callable[[], PacingToolEnv]:
    """The ``environment_factory`` for :class:`PacingToolEnv` over ``samples``.

    ``make_env``: where each episode runs (:class:`~policies.training.adapter.
    RemotePacingEnv` for a server's sessions).
    """
    by_id = samples_by_id(samples)

    def factory() -> PacingToolEnv:
        return PacingToolEnv(by_id, settings, seed=seed, make_env=make_env)

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
