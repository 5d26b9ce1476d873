"""``video-env train rl | trl``: multi-turn DAPO in the Pacing env, and TRL's route.

``rl``'s flags and defaults come from :class:`~policies.training.rl.DAPOConfig` (with its
rollouts' :class:`~policies.episode_settings.EpisodeSettings`), ``trl``'s from
:class:`TRLRunSettings`, whose DAPO defaults are ``DAPOConfig``'s (:mod:`video_env.cli.flags`).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policies.episode_settings import EpisodeSettings
from policies.training.cli_common import (
    EPISODE_FLAGS_SET_BY_HAND,
    dataset_args,
    end_note_arg,
    episode_by_hand,
    question_first_arg,
    samples_from_args,
)
from policies.training.dapo import DAPOSettings
from policies.training.rl import DYNAMIC_FILTERS, OVERLONG, DAPOConfig
from policies.training.trl_resume import ResumePoint, resume_point
from policies.videoscout.prompt import PromptLayout
from policies.videoscout.record import save_trained_rules
from video_env import env_vars
from video_env.cli.flags import Flags
from video_env.envs.pacing_rules import PacingRules
from video_env.errors import ConfigError
from video_env.run_record import command_line

__all__ = [
    "RL_FLAGS",
    "TRL_FLAGS",
    "TRL_RECORD_FILE",
    "TRLRunSettings",
    "add_rl_commands",
    "run_rl",
    "run_trl",
]

#: Flags named otherwise than their field.
_NAMES = {"learning_rate": "--lr"}
#: Fields without a flag: the question seed's (``--seed``, with the dataset's flags), the
#: loss's numerical guard, and the episodes' set from other flags.
_SKIP = ("seed", "loss.std_eps", *EPISODE_FLAGS_SET_BY_HAND)


@dataclass(frozen=True)
class TRLRunSettings:
    """A ``train trl`` run's settings (defaults: :class:`~policies.training.rl.DAPOConfig`'s).

    Attributes:
        steps: Optimiser steps.
        group_size: Rollouts per question (G).
        learning_rate: AdamW learning rate.
        loss: Clip range and KL weight.
        per_device_batch: Rollouts per device per step (0: G).
        grad_accum: Gradient-accumulation steps.
        max_completion_length: Tokens of a rollout: replies and tool results with frames.
        save_steps: Save a resumable checkpoint-N every N steps (0: at the end).
        max_seconds: A wall-clock budget: no step starts once it is spent (the run is saved
            as usual).
        resume: Continue the run in --out from its latest checkpoint-N (policy, optimizer,
            steps, random state); give the run's own settings, with --steps and
            --max-seconds counting the whole run.
        bf16: The policy in bfloat16.
        freeze_vision: Keep the vision tower's blocks fixed (its merger still trains).
        gradient_checkpointing: Trade compute for memory (TRL's default).
        use_vllm: Generate with vLLM (GPU only).
        vllm_mode: vLLM beside the trainer (``colocate``) or as a ``server``.
        env_url: Run the episodes on a ``video-env serve`` Pacing server (same questions
            and rules, --pixel-observations, no sensors).
        seed: Seed of TRL and of the env resets.
        episode: The rollouts: env steps (tool calls) at most, tokens per reply at most (the
            paper's 4,096; TRL alone would allow a reply the whole completion length),
            sampling temperature, rules and prompt layout.
    """

    steps: int = DAPOConfig.steps
    group_size: int = DAPOConfig.group_size
    learning_rate: float = DAPOConfig.learning_rate
    loss: DAPOSettings = field(default_factory=DAPOSettings)
    per_device_batch: int = 0
    grad_accum: int = 1
    max_completion_length: int = 32768
    save_steps: int = 0
    max_seconds: float | None = None
    resume: bool = False
    bf16: bool = False
    freeze_vision: bool = False
    gradient_checkpointing: bool = True
    use_vllm: bool = False
    vllm_mode: str = "colocate"
    env_url: str | None = None
    seed: int = 0
    episode: EpisodeSettings = field(default_factory=lambda: DAPOConfig().episode)


#: ``rl``'s flags: DAPO's, its rollouts'.
RL_FLAGS = Flags(
    DAPOConfig(),
    names=_NAMES,
    skip=_SKIP,
    choices={"dynamic_filter": DYNAMIC_FILTERS, "overlong": OVERLONG},
)
#: ``trl``'s flags (no decoding guides: TRL's rollouts are free).
TRL_FLAGS = Flags(
    TRLRunSettings(),
    names=_NAMES,
    skip=(*_SKIP, "episode.guided", "episode.format_guided"),
    choices={"vllm_mode": ("server", "colocate")},
)


def run_rl(args: argparse.Namespace) -> int:
    """``train rl`` with ``args``."""
    from policies.training.distill import load_reference_chunks, with_reference_chunks
    from policies.training.rl import train_rl

    samples = samples_from_args(args)
    if args.trajectories:
        chunks = load_reference_chunks(args.trajectories)
        samples = with_reference_chunks(samples, chunks)
        print(f"reference chunks of the teacher for {len(chunks)} questions")
    config = RL_FLAGS.build(args, **episode_by_hand(args))
    history = train_rl(args.model, samples, args.out, config)
    updated = sum(1 for s in history if s.groups)
    print(f"DAPO: {len(history)} steps ({updated} with an update); model: {args.out}")
    return 0


def run_trl(args: argparse.Namespace) -> int:
    """``train trl`` with ``args``."""
    from policies.training.distill import load_reference_chunks, with_reference_chunks
    from policies.training.provenance import TOOL_FORM, freeze_vision_blocks, keep_pixel_vlm_marker
    from policies.training.trl_grpo import (
        build_trl_trainer,
        reply_token_cap,
        time_budget_callback,
        trl_dapo_config,
    )
    from policies.training.trl_resume import load_policy_weights, progress_callback
    from video_env._optional import require
    from video_env.run_record import machine

    transformers = require("transformers", "train", "video-env train trl")
    run_settings = TRL_FLAGS.build(args, **episode_by_hand(args))
    episode = run_settings.episode
    samples = samples_from_args(args)
    if args.trajectories:
        samples = with_reference_chunks(samples, load_reference_chunks(args.trajectories))
    settings: dict[str, Any] = {
        "num_generations": run_settings.group_size,
        "per_device_train_batch_size": run_settings.per_device_batch or run_settings.group_size,
        "gradient_accumulation_steps": run_settings.grad_accum,
        "max_steps": run_settings.steps,
        "learning_rate": run_settings.learning_rate,
        "beta": run_settings.loss.beta,
        "epsilon": run_settings.loss.eps_low,
        "epsilon_high": run_settings.loss.eps_high,
        "temperature": episode.temperature,
        "max_completion_length": run_settings.max_completion_length,
        "max_tool_calling_iterations": episode.max_turns,
        **reply_token_cap(episode.max_new_tokens, vllm=run_settings.use_vllm),
        "bf16": run_settings.bf16,
        "gradient_checkpointing": run_settings.gradient_checkpointing,
        "save_steps": run_settings.save_steps or _SAVE_AT_END,
        "logging_steps": 1,
        "seed": run_settings.seed,
    }
    dtype = "bfloat16" if run_settings.bf16 else "float32"  # TRL's own default for a path
    if run_settings.bf16:
        settings["model_init_kwargs"] = {"dtype": dtype}
    if run_settings.use_vllm:
        settings.update(use_vllm=True, vllm_mode=run_settings.vllm_mode)
    rules, layout = episode.rules, episode.layout
    question_ids = [sample.id for sample in samples]
    run = _trl_run_settings(args, settings, rules, layout)
    resumed = resume_point(args.out, args.model, run, question_ids) if run_settings.resume else None
    if resumed is not None and _trl_run_done(args, resumed):
        if _trl_recorded_steps(args.out) == resumed.step:
            done = f"{resumed.step} of {run_settings.steps} steps"
            print(f"{args.out} has done {done}: nothing to resume")
            return 0
        # stopped while saving its last checkpoint: TRL takes no step, the model is saved
        settings["max_steps"] = resumed.step
    model: Any = args.model
    if run_settings.freeze_vision or resumed is not None:  # else TRL loads the path itself
        model = transformers.AutoModelForImageTextToText.from_pretrained(
            args.model, local_files_only=True, dtype=dtype
        )
    if resumed is not None:  # the trainer's own reload would miss them (trl_resume)
        load_policy_weights(model, resumed.checkpoint)
    if run_settings.freeze_vision:
        freeze_vision_blocks(model)
    given = dict(settings)
    if not isinstance(model, str):  # loaded here: TRL takes no model_init_kwargs with it
        given.pop("model_init_kwargs", None)
    config = trl_dapo_config(args.out, **given)
    processor = transformers.AutoProcessor.from_pretrained(args.model, local_files_only=True)
    from policies.training.adapter import RemotePacingEnv, local_pacing_env

    # the episodes in this process, or in sessions of a `video-env serve` server
    make_env = RemotePacingEnv(run_settings.env_url) if run_settings.env_url else local_pacing_env
    spent = resumed.seconds if resumed is not None else 0.0
    commands = [*(resumed.commands if resumed is not None else ()), command_line()]
    budget = (
        []
        if run_settings.max_seconds is None
        else [time_budget_callback(run_settings.max_seconds, spent=spent)]
    )
    progress = progress_callback(args.model, run, question_ids, commands, spent=spent)
    trainer = build_trl_trainer(
        model, processor, samples, config, episode, seed=run_settings.seed, make_env=make_env,
        callbacks=[*budget, progress],
    )  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # first: a stopped run's checkpoint-N folders bench under these rules too
    save_trained_rules(args.out, rules, **layout.policy_kwargs())
    start = time.monotonic()
    result = trainer.train(
        resume_from_checkpoint=str(resumed.checkpoint) if resumed is not None else None
    )
    trainer.save_model(args.out)
    record = {
        "settings": settings,
        "freeze_vision": run_settings.freeze_vision,
        "base": args.model,
        "questions": len(samples),
        "steps": int(result.global_step),
        "max_seconds": run_settings.max_seconds,
        "stopped_by_time": bool(budget and budget[0].stopped_after is not None),
        "seed": run_settings.seed,
        "seconds": round(spent + time.monotonic() - start, 1),
        "machine": machine(),
        "command": commands[-1],
    }
    if resumed is not None:
        record.update(resumed_after_step=resumed.step, earlier_commands=commands[:-1])
    (out / TRL_RECORD_FILE).write_text(
        json.dumps({**record, "log": trainer.state.log_history}, indent=2, default=str), "utf-8"
    )
    keep_pixel_vlm_marker(
        args.model, out, "trl", json.loads(json.dumps(record, default=str)), form=TOOL_FORM
    )
    print(f"TRL GRPO (dapo loss): {result.global_step} steps; model: {args.out}")
    return 0


def _trl_run_settings(
    args: argparse.Namespace, settings: dict[str, Any], rules: PacingRules, layout: PromptLayout
) -> dict[str, Any]:
    """What defines a ``train trl`` run besides TRL's settings: a resumed call repeats it all.

    The number of processes too: a step's completions (so its questions) are the
    per-device batch x accumulation x processes.
    """
    return {**settings, "rules": repr(rules), **layout.policy_kwargs(),
            "freeze_vision": args.freeze_vision, "trajectories": args.trajectories,
            "world_size": _world_size()}  # fmt: skip


def _world_size() -> int:
    """The processes this training runs on, as the launcher set it (1 without one)."""
    for variable in env_vars.WORLD_SIZES:
        if (value := variable.get()) is None:
            continue
        try:
            size = int(value)
        except ValueError:
            size = 0
        if size < 1:
            raise ConfigError(f"{variable.name}={value!r} is not a number of processes")
        return size
    return 1


def _trl_run_done(args: argparse.Namespace, resumed: ResumePoint) -> bool:
    """Whether the resumed run had taken its steps or spent its time at its checkpoint."""
    spent = args.max_seconds is not None and resumed.seconds >= args.max_seconds
    return resumed.step >= args.steps or spent


def _trl_recorded_steps(out: str) -> int | None:
    """The steps of the run's final model in ``out`` (``None``: no readable record)."""
    try:
        steps = json.loads((Path(out) / TRL_RECORD_FILE).read_text("utf-8")).get("steps")
    except (OSError, ValueError, AttributeError):
        return None
    return steps if isinstance(steps, int) else None


#: ``--save-steps`` unset: no interval, only the checkpoints TRL saves at the last step
#: and the time budget where it stops (an interval derived from ``--steps`` would stay
#: the checkpoint's when a resumed run is given more steps).
_SAVE_AT_END = 10**9


#: A ``train trl`` run's record in its folder: settings, seed, wall time, machine,
#: command and TRL's log of every step.
TRL_RECORD_FILE = "trl.json"


def _rl_kind(kinds: Any, name: str, flags: Flags[Any], run: Any, **texts: str) -> None:
    """Add the RL kind ``name`` with its ``flags`` (and the start, output, questions, prompt).

    The prompt's flags default to the start model's record.
    """
    parser = kinds.add_parser(name, **texts)
    parser.add_argument("--model", required=True, help="starting checkpoint (e.g. the SFT output)")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--trajectories", help="trajectories.jsonl of `train distill` (timing T)")
    flags.add(parser)
    dataset_args(parser)
    end_note_arg(parser, default=None)
    question_first_arg(parser, recorded=True)
    parser.set_defaults(func=run)


def add_rl_commands(kinds: Any) -> None:
    """Add ``rl`` and ``trl`` under ``video-env train``."""
    _rl_kind(
        kinds,
        "rl",
        RL_FLAGS,
        run_rl,
        help="multi-turn DAPO in the Pacing env (single process)",
        description="DAPO from a checkpoint (usually the SFT output): G episodes per question, "
        "the env's composite reward, group-relative advantages, decoupled clipping, token-level "
        "normalisation, k3 KL to the frozen start, dynamic sampling. Writes log.jsonl, "
        "checkpoint-N/ and the final model. Defaults are VideoScout's where it gives one.",
    )
    _rl_kind(
        kinds,
        "trl",
        TRL_FLAGS,
        run_trl,
        help="DAPO through TRL's GRPOTrainer, the env as its tool environment (multi-GPU)",
        description="The Pacing env as TRL's environment_factory: actions are tool calls in a "
        "growing chat, each tool result carries the next window's frames (not the paper's "
        "fresh chat per turn; see docs/training.md). Launch with `accelerate launch` for "
        "several GPUs. Loss: TRL's dapo loss with VideoScout's eps/beta/G/lr.",
    )
