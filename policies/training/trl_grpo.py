"""A ready TRL ``GRPOTrainer`` for the Pacing env, with VideoScout's DAPO settings.

:func:`trl_dapo_config` maps DESIGN §4's DAPO numbers onto TRL's ``GRPOConfig``
(``loss_type="dapo"``: token-level loss normalised by the active tokens of the batch;
ε_low 0.20, ε_high 0.28; k3 KL to the frozen start with β 0.01; G generations per
question; learning rate 5e-6; rewards scaled by the group's std, so the advantage is
``(R_i - mean R) / std R`` shared by all tokens of rollout i). :func:`build_trl_trainer`
wires :class:`~policies.training.trl_env.PacingToolEnv` in as ``environment_factory``; the
env's composite reward is its ``get_reward``.

What TRL 1.16 does differently from ``video-env train rl`` (``docs/training.md``): the chat
grows (tool calls, tool results with the frames) instead of a fresh chat per turn; groups
whose rewards are all equal get zero advantage (their tokens still carry the KL term) but
are not dropped and resampled (no dynamic sampling); the loss is normalised over the
tokens of the whole (accumulated) batch rather than of each group.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from policies.training.trl_env import pacing_env_factory, tool_chat_processor, tool_dataset_rows
from video_env._optional import require
from video_env.envs.pacing_rules import PacingRules
from video_env.envs.rules_record import DEFAULT_LAYOUT, PromptLayout
from video_env.errors import ConfigError
from video_env.types import VideoQA

__all__ = ["PAPER_DAPO", "build_trl_trainer", "trl_dapo_config"]

_PURPOSE = "TRL's GRPO trainer with the Pacing env"

#: DESIGN §4's DAPO settings, as ``GRPOConfig`` fields.
PAPER_DAPO: dict[str, Any] = {
    "loss_type": "dapo",
    "epsilon": 0.20,
    "epsilon_high": 0.28,
    "beta": 0.01,
    "num_generations": 8,
    "learning_rate": 5e-6,
    "scale_rewards": "group",
    "temperature": 1.0,
}


def trl_dapo_config(output_dir: str | Path, **overrides: Any) -> Any:
    """A ``trl.GRPOConfig`` with :data:`PAPER_DAPO` and ``overrides`` on top.

    Our defaults besides the paper's (DESIGN §4 gives none): ``max_completion_length``
    32768 tokens for the whole multi-turn rollout (tool results with frames included; a
    tool result that would not fit is dropped by TRL and the rollout ends there),
    ``max_tool_calling_iterations`` 32 (the env's turn cap), truncated rollouts masked
    out of the loss (DAPO's overlong filtering), no reporting integrations.
    """
    trl = require("trl", "train", _PURPOSE)
    settings: dict[str, Any] = {
        **PAPER_DAPO,
        "max_completion_length": 32768,
        "max_tool_calling_iterations": 32,
        "mask_truncated_completions": True,
        "report_to": "none",
        "remove_unused_columns": False,
        **overrides,
    }
    return trl.GRPOConfig(output_dir=str(output_dir), **settings)


def build_trl_trainer(
    model: Any,
    processor: Any,
    samples: Sequence[VideoQA],
    config: Any,
    *,
    rules: PacingRules | None = None,
    max_turns: int = 32,
    seed: int = 0,
    reward_funcs: Sequence[Callable[..., list[float]]] = (),
    callbacks: Sequence[Any] = (),
    environment_factory: Callable[[], Any] | None = None,
    layout: PromptLayout = DEFAULT_LAYOUT,
) -> Any:
    """A ``trl.GRPOTrainer`` training ``model`` in the Pacing env on ``samples``.

    Args:
        model: A loaded VLM (e.g. ``Qwen2_5_VLForConditionalGeneration``) or its path.
        processor: Its processor; given a tool-calling chat template if it has none
            (:func:`~policies.training.trl_env.tool_chat_processor`).
        samples: The questions (``meta["reference_chunk"]``: the timing reward's T).
        config: A ``GRPOConfig`` (see :func:`trl_dapo_config`).
        rules: Pacing rules (default: the paper's).
        max_turns: Env steps per episode at most.
        seed: Seed of the env resets.
        reward_funcs: Extra TRL reward functions, added to the env's reward.
        callbacks: ``transformers`` trainer callbacks.
        environment_factory: Another factory of tool envs (default: in-process
            :class:`~policies.training.trl_env.PacingToolEnv`; a server's:
            :func:`~policies.training.trl_remote.remote_pacing_env_factory`).
        layout: The layout of the tool results' VideoScout text (the default factory's).
    """
    trl = require("trl", "train", _PURPOSE)
    datasets = require("datasets", "train", _PURPOSE)
    if "environment_factory" not in inspect.signature(trl.GRPOTrainer).parameters:
        raise ConfigError(
            f"trl {trl.__version__} has no GRPOTrainer(environment_factory=...); "
            "upgrade trl (tested with 1.16)"
        )

    dataset = datasets.Dataset.from_list(tool_dataset_rows(samples, rules))
    return trl.GRPOTrainer(
        model=model,
        reward_funcs=list(reward_funcs) or None,
        args=config,
        train_dataset=dataset,
        processing_class=tool_chat_processor(processor),
        environment_factory=environment_factory
        or pacing_env_factory(
            samples,
            rules=rules,
            max_turns=max_turns,
            seed=seed,
            layout=layout,
        ),
        callbacks=list(callbacks) or None,
    )
