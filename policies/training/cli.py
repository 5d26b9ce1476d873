"""``video-env train distill | tool-chats | sft | rl | trl``: VideoScout's training commands."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from policies.training.trl_resume import ResumePoint, resume_point
from video_env.envs.pacing_rules import PacingRules, SpeedSpec
from video_env.envs.rules_record import (
    END_NOTE_PLACES,
    PromptLayout,
    pixel_vlm_rules,
    save_trained_rules,
    trained_layout,
    trained_rules,
)
from video_env.errors import ConfigError
from video_env.run_record import command_line
from video_env.types import VideoQA

if TYPE_CHECKING:
    from policies.training.sft_extension import SFTExtension

SCRIPTED_TEACHER = "scripted-ground-truth"
FRAME_TEACHER = "scripted-frames"

#: Pacing presets: the paper's; one small enough for a CPU smoke test of the pipeline; and
#: the paper's frame counts at the pixel VLM's own frame shape (16:9, fed as a 720p frame
#: is, 504x280; 4x at the paper's 316/448 of that side), since that model never saw a
#: square frame (docs/pixel_vlm.md).
RULES: dict[str, Callable[[], PacingRules]] = {
    "paper": PacingRules,
    "cpu-smoke": lambda: PacingRules(
        speeds={1: SpeedSpec(4, 56, 1), 2: SpeedSpec(4, 56, 2), 4: SpeedSpec(2, 56, 4)},
        rewatch=SpeedSpec(4, 56, 1),
    ),
    "pixel-vlm": pixel_vlm_rules,
}


def samples_from_args(args: argparse.Namespace) -> list[VideoQA]:
    """The questions ``--split``, ``--dataset`` or ``--suite`` name (``--limit``: the first)."""
    if args.split:
        return split_samples(args.split, args.videos, args.limit)
    if args.dataset:
        from video_env.data import load

        if not args.annotations:
            raise ConfigError("--dataset needs --annotations")
        return list(load(args.dataset, args.annotations, args.video_root, limit=args.limit))
    from video_env.synth.suites import load_suite

    return load_suite(args.suite, limit=args.limit)


def split_samples(split: str, videos: int, limit: int | None = None) -> list[VideoQA]:
    """Questions of the pixel-real world's ``split`` videos that its perception reads.

    The first ``videos`` videos of ``split`` (``train``, ``calib`` or ``test``: disjoint
    seeds, the test split being the pixel VLM's held-out harness), every colour, material
    and object needle as an MCQ and as an open question; the first ``limit`` of them.
    """
    from video_env.pixel.splits import READ_CATEGORIES, split_videos
    from video_env.synth.questions import FORMS, needle_sample

    samples = [
        needle_sample(video, needle, form, source=f"pixel-{split}")
        for video in split_videos(split, videos)
        for needle in video.needles
        if needle.category in READ_CATEGORIES
        for form in FORMS
    ]
    return samples[:limit] if limit else samples


def pacing_rules(args: argparse.Namespace) -> PacingRules:
    """``--rules``; without it, the rules ``--model`` was trained under, else the paper's."""
    if args.rules:
        return RULES[args.rules]()
    model = getattr(args, "model", None)
    if model:
        recorded = trained_rules(model)
        if recorded is not None:
            print(f"pacing rules: those recorded in {model} (videoscout.json)")
            return recorded
    return RULES["paper"]()


#: The laboratory's command that trains with the VideoScout-pixel recipe's own teacher and
#: SFT additions (the library's flags plus its own).
LAB_COMMAND = "python -m experiments.videoscout_pixel"


def teacher_from_spec(spec: str, mistake_rate: float = 0.0) -> Any:
    """The teacher ``--teacher`` names: a VLM spec or the ground-truth scripted teacher.

    Raises:
        ConfigError: For the laboratory's frame teacher (its command names it).
    """
    if spec == FRAME_TEACHER or spec.startswith(f"{FRAME_TEACHER}:"):
        raise ConfigError(
            f"the {FRAME_TEACHER} teacher is the laboratory's (experiments/videoscout_pixel): "
            f"{LAB_COMMAND} distill --teacher {spec} ..."
        )
    if spec == SCRIPTED_TEACHER:
        from policies.training.teachers import GroundTruthScriptedTeacher

        print(
            "teacher: a SCRIPTED teacher that reads the ground truth (tests and offline "
            "demos only; not a model)"
        )
        return GroundTruthScriptedTeacher(mistake_rate=mistake_rate)
    from policies.videoscout import resolve_vision_chat

    return resolve_vision_chat(spec)


def run_distill(args: argparse.Namespace, teacher: Any = None) -> int:
    """``train distill`` with ``args``; ``teacher`` instead of ``--teacher``'s, if given."""
    from policies.training.distill import DistillConfig, distill

    config = DistillConfig(
        tries=args.tries,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        max_turns=args.max_turns,
        rules=pacing_rules(args),
        seed=args.seed,
        end_note=args.end_note,
        question_first=args.question_first,
    )
    samples = samples_from_args(args)
    if teacher is None:
        teacher = teacher_from_spec(args.teacher, args.mistake_rate)
    start = time.monotonic()
    stats = distill(teacher, samples, args.out, config)
    record = {"command": command_line(), "seconds": round(time.monotonic() - start, 1)}
    (Path(args.out) / "distill.json").write_text(json.dumps(record, indent=2), "utf-8")
    print(stats.summary())
    print(f"dataset: {args.out}/turns.jsonl; trajectories: {args.out}/trajectories.jsonl")
    return 0


def _tool_chats(args: argparse.Namespace) -> int:
    from policies.training.tool_chats import write_tool_chats

    folder = Path(args.trajectories).parent  # the distill run's rules and layout
    recorded = trained_rules(folder)
    rules = RULES[args.rules]() if args.rules else recorded or RULES["paper"]()
    layout = trained_layout(folder)
    result = write_tool_chats(
        args.trajectories,
        samples_from_args(args),  # as the teacher played them (its reward is the replay's check)
        args.out,
        rules=rules,
        layout=layout,
        max_turns=args.max_turns,
        seed=args.seed,
    )
    left = len(result.skipped)
    print(f"tool chats: {result.chats} written, {left} left out; {result.images} images")
    print(f"data: {result.path}")
    if args.model and result.chats:
        _print_positions(args.model, result.path)
    for sample_id, why in list(result.skipped.items())[:10]:
        print(f"  left out {sample_id}: {why}")
    return 0


def _print_positions(model: str, chats: Path) -> None:
    """How many positions the chats take for ``model``, and how many fit its context."""
    import statistics

    from policies.training.tool_chats import chat_positions, max_positions
    from video_env._optional import require

    transformers = require("transformers", "models", "video-env train tool-chats --model")
    processor = transformers.AutoProcessor.from_pretrained(model, local_files_only=True)
    config = transformers.AutoConfig.from_pretrained(model, local_files_only=True)
    context = max_positions(config) or 0
    positions = chat_positions(chats, processor)
    fit = sum(1 for p in positions if p <= context)
    print(f"positions with {model}'s processor: median {statistics.median(positions):,.0f}, "
          f"largest {max(positions):,}; {fit} of {len(positions)} chats fit its "
          f"{context:,} positions")  # fmt: skip


def run_sft(args: argparse.Namespace, extension: SFTExtension | None = None) -> int:
    """``train sft`` with ``args`` (and an experiment's ``extension``, if given)."""
    from policies.training.sft import SFTSettings, train_sft

    settings = SFTSettings(
        learning_rate=args.lr,
        epochs=args.epochs,
        batch_size=args.batch_size,
        per_device_batch=args.per_device_batch,
        max_steps=args.max_steps,
        lora_rank=args.lora_rank,
        bf16=args.bf16,
        gradient_checkpointing=args.gradient_checkpointing,
        seed=args.seed,
        save_steps=args.save_steps,
        progress_bar=not args.quiet,
        freeze_vision=args.freeze_vision,
        freeze_layers=args.freeze_layers,
        context=args.context,
    )
    result = train_sft(
        args.model, args.data, args.out, settings, devices=args.devices, extension=extension
    )
    first, last = (result.losses[0], result.losses[-1]) if result.losses else (0.0, 0.0)
    print(f"SFT: {result.steps} steps, loss {first:.4f} -> {last:.4f}; model: {result.output_dir}")
    return 0


def _rl(args: argparse.Namespace) -> int:
    from policies.training.dapo import DAPOSettings
    from policies.training.distill import load_reference_chunks, with_reference_chunks
    from policies.training.rl import DAPOConfig, train_rl

    samples = samples_from_args(args)
    if args.trajectories:
        chunks = load_reference_chunks(args.trajectories)
        samples = with_reference_chunks(samples, chunks)
        print(f"reference chunks of the teacher for {len(chunks)} questions")
    config = DAPOConfig(
        loss=DAPOSettings(eps_low=args.eps_low, eps_high=args.eps_high, beta=args.beta),
        group_size=args.group_size,
        learning_rate=args.lr,
        groups_per_step=args.groups_per_step,
        max_draws_per_step=args.max_draws_per_step,
        ppo_epochs=args.ppo_epochs,
        steps=args.steps,
        temperature=args.temperature,
        max_turns=args.max_turns,
        max_new_tokens=args.max_new_tokens,
        dynamic_filter=args.dynamic_filter,
        overlong=args.overlong,
        overlong_buffer=args.overlong_buffer,
        save_every=args.save_every,
        max_seconds=args.max_seconds,
        seed=args.seed,
        rules=pacing_rules(args),
        bf16=args.bf16,
        freeze_vision=args.freeze_vision,
        guided=args.guided,
        format_guided=args.format_guided,
        score_guided=args.score_guided,
        resume=args.resume,
        **_layout(args).policy_kwargs(),
    )
    history = train_rl(args.model, samples, args.out, config)
    updated = sum(1 for s in history if s.groups)
    print(f"DAPO: {len(history)} steps ({updated} with an update); model: {args.out}")
    return 0


def _trl(args: argparse.Namespace) -> int:
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
    samples = samples_from_args(args)
    if args.trajectories:
        samples = with_reference_chunks(samples, load_reference_chunks(args.trajectories))
    settings: dict[str, Any] = {
        "num_generations": args.group_size,
        "per_device_train_batch_size": args.per_device_batch or args.group_size,
        "gradient_accumulation_steps": args.grad_accum,
        "max_steps": args.steps,
        "learning_rate": args.lr,
        "beta": args.beta,
        "epsilon": args.eps_low,
        "epsilon_high": args.eps_high,
        "temperature": args.temperature,
        "max_completion_length": args.max_completion_length,
        "max_tool_calling_iterations": args.max_turns,
        **reply_token_cap(args.max_new_tokens, vllm=args.use_vllm),
        "bf16": args.bf16,
        "gradient_checkpointing": not args.no_gradient_checkpointing,
        "save_steps": args.save_steps or _SAVE_AT_END,
        "logging_steps": 1,
        "seed": args.seed,
    }
    dtype = "bfloat16" if args.bf16 else "float32"  # TRL's own default for a path
    if args.bf16:
        settings["model_init_kwargs"] = {"dtype": dtype}
    if args.use_vllm:
        settings.update(use_vllm=True, vllm_mode=args.vllm_mode)
    rules = pacing_rules(args)
    layout = _layout(args)
    question_ids = [sample.id for sample in samples]
    run = _trl_run_settings(args, settings, rules, layout)
    resumed = resume_point(args.out, args.model, run, question_ids) if args.resume else None
    if resumed is not None and _trl_run_done(args, resumed):
        if _trl_recorded_steps(args.out) == resumed.step:
            print(f"{args.out} has done {resumed.step} of {args.steps} steps: nothing to resume")
            return 0
        # stopped while saving its last checkpoint: TRL takes no step, the model is saved
        settings["max_steps"] = resumed.step
    model: Any = args.model
    if args.freeze_vision or resumed is not None:  # else TRL loads the path itself
        model = transformers.AutoModelForImageTextToText.from_pretrained(
            args.model, local_files_only=True, dtype=dtype
        )
    if resumed is not None:  # the trainer's own reload would miss them (trl_resume)
        load_policy_weights(model, resumed.checkpoint)
    if args.freeze_vision:
        freeze_vision_blocks(model)
    given = dict(settings)
    if not isinstance(model, str):  # loaded here: TRL takes no model_init_kwargs with it
        given.pop("model_init_kwargs", None)
    config = trl_dapo_config(args.out, **given)
    processor = transformers.AutoProcessor.from_pretrained(args.model, local_files_only=True)
    factory = None
    if args.env_url:  # the episodes in sessions of a `video-env serve` server
        from policies.training.trl_remote import remote_pacing_env_factory

        factory = remote_pacing_env_factory(
            samples,
            args.env_url,
            rules=rules,
            max_turns=args.max_turns,
            seed=args.seed,
            layout=layout,
        )
    spent = resumed.seconds if resumed is not None else 0.0
    commands = [*(resumed.commands if resumed is not None else ()), command_line()]
    budget = (
        [] if args.max_seconds is None else [time_budget_callback(args.max_seconds, spent=spent)]
    )
    progress = progress_callback(args.model, run, question_ids, commands, spent=spent)
    trainer = build_trl_trainer(
        model, processor, samples, config, rules=rules, max_turns=args.max_turns,
        seed=args.seed, environment_factory=factory, layout=layout,
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
        "freeze_vision": args.freeze_vision,
        "base": args.model,
        "questions": len(samples),
        "steps": int(result.global_step),
        "max_seconds": args.max_seconds,
        "stopped_by_time": bool(budget and budget[0].stopped_after is not None),
        "seed": args.seed,
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


#: Where launchers put the number of processes, in accelerate's order (MPI's, then
#: torchrun's and accelerate's own).
_WORLD_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "WORLD_SIZE")


def _world_size() -> int:
    """The processes this training runs on, as the launcher set it (1 without one)."""
    for variable in _WORLD_SIZE_VARIABLES:
        if (value := os.environ.get(variable)) is None:
            continue
        try:
            size = int(value)
        except ValueError:
            size = 0
        if size < 1:
            raise ConfigError(f"{variable}={value!r} is not a number of processes")
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


def _rl_run_args(parser: argparse.ArgumentParser) -> None:
    """Arguments every RL kind takes: start, output, timing references, steps, G, DAPO's."""
    parser.add_argument("--model", required=True, help="starting checkpoint (e.g. the SFT output)")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--trajectories", help="trajectories.jsonl of `train distill` (timing T)")
    parser.add_argument("--steps", type=int, default=100, help="optimiser steps")
    parser.add_argument("--group-size", type=int, default=8, help="G")
    parser.add_argument("--lr", type=float, default=5e-6)
    parser.add_argument("--beta", type=float, default=0.01, help="k3 KL weight")
    parser.add_argument("--eps-low", type=float, default=0.20)
    parser.add_argument("--eps-high", type=float, default=0.28)
    parser.add_argument("--temperature", type=float, default=1.0)


def _end_note_arg(parser: argparse.ArgumentParser, default: str | None = "window") -> None:
    where = (
        "default: the one recorded in --model's folder, else window"
        if default is None
        else (f"default: {default}")
    )
    parser.add_argument("--end-note", choices=END_NOTE_PLACES, default=default,
                        help="where VideoScout's prompt says that a window ends the video "
                        "(window: its window line; last: the prompt's last line; off: the "
                        f"paper's plain prompt; {where})")  # fmt: skip


def _question_first_arg(parser: argparse.ArgumentParser, recorded: bool) -> None:
    default = "the one recorded in --model's folder, else off" if recorded else "off"
    parser.add_argument("--question-first", action=argparse.BooleanOptionalAction,
                        default=None if recorded else False,
                        help="VideoScout's prompt puts the question and its options before "
                        "the frames, the memory after them (the paper: frames, memory, "
                        f"question; default: {default})")  # fmt: skip


def _layout(args: argparse.Namespace) -> PromptLayout:
    """``--end-note`` and ``--question-first``, else the start model's record, else defaults."""
    return trained_layout(args.model, end_note=args.end_note, question_first=args.question_first)


def _dataset_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--suite", default="synth-quick", help="synthetic suite (default)")
    parser.add_argument("--dataset", help="a registered dataset instead (see `video-env data`)")
    parser.add_argument("--annotations", help="the dataset's annotation file or folder")
    parser.add_argument("--video-root", help="the dataset's video folder")
    parser.add_argument(
        "--split",
        choices=("train", "calib", "test"),
        help="the pixel-real world's videos of this split instead (colour, material and "
        "object questions, both forms)",
    )
    parser.add_argument("--videos", type=int, default=8, help="videos of --split")
    parser.add_argument("--limit", type=int, help="first N questions")
    parser.add_argument(
        "--rules",
        choices=sorted(RULES),
        help="pacing preset (default: the rules recorded in --model's folder, else paper)",
    )
    parser.add_argument("--seed", type=int, default=0)


class _MovedToLab(argparse.Action):
    """A flag of the laboratory's recipe, not the library's: refuse it, naming its command."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        kind = parser.prog.split()[-1]
        parser.error(f"{self.option_strings[0]} is the laboratory's: {LAB_COMMAND} {kind} ...")


def _moved_flags(parser: argparse.ArgumentParser, *flags: str) -> None:
    for flag in flags:
        parser.add_argument(flag, nargs="?", action=_MovedToLab, help=argparse.SUPPRESS)


def add_distill_command(kinds: Any, *, lab_flags_moved: bool = True) -> argparse.ArgumentParser:
    """Add ``distill`` (its handler: :func:`run_distill`); returns its parser.

    Args:
        kinds: The subparsers to add it to.
        lab_flags_moved: Refuse the laboratory's teacher flags, naming its command (the
            laboratory's own command adds them instead).
    """
    distill = kinds.add_parser(
        "distill",
        help="verified teacher trajectories -> a turn-level SFT dataset (TRL format)",
        description="Roll out a teacher VLM in the Pacing env with the VideoScout prompt; keep "
        "an episode only if it answers correctly and passes validation (up to --tries per "
        "question). Writes turns.jsonl (+ images/), trajectories.jsonl (with the teacher's "
        "answer chunk), questions.jsonl and stats.json. Resumable.",
    )
    teacher_help = (
        f"openai:MODEL, qwen2.5-vl:PATH or {SCRIPTED_TEACHER} (reads the ground truth: "
        f"tests and demos only); {FRAME_TEACHER} is the laboratory's ({LAB_COMMAND})"
    )
    distill.add_argument("--teacher", required=True, help=teacher_help)
    distill.add_argument("--out", required=True, help="output folder")
    distill.add_argument("--tries", type=int, default=8, help="episodes per question at most")
    distill.add_argument("--temperature", type=float, default=0.7)
    distill.add_argument("--max-new-tokens", type=int, default=1024)
    distill.add_argument("--max-turns", type=int, default=64)
    distill.add_argument("--mistake-rate", type=float, default=0.0,
                         help=f"wrong answers of the {SCRIPTED_TEACHER} teacher")  # fmt: skip
    if lab_flags_moved:
        _moved_flags(distill, "--guess-share", "--steady-speed")
    _end_note_arg(distill)
    _question_first_arg(distill, recorded=False)
    _dataset_args(distill)
    distill.set_defaults(func=run_distill)
    return cast(argparse.ArgumentParser, distill)


def add_sft_command(kinds: Any, *, lab_flags_moved: bool = True) -> argparse.ArgumentParser:
    """Add ``sft`` (its handler: :func:`run_sft`); returns its parser.

    Args:
        kinds: The subparsers to add it to.
        lab_flags_moved: Refuse the laboratory's SFT flags, naming its command (the
            laboratory's own command adds them instead).
    """
    sft = kinds.add_parser(
        "sft",
        help="supervised fine-tuning on distilled turns (TRL SFTTrainer)",
        description="Fine-tune a chat VLM on turns.jsonl with the loss on the agent's replies "
        "only. Defaults are VideoScout's: lr 1.5e-5, cosine, 5%% warm-up, batch 16, 3 epochs.",
    )
    sft.add_argument("--model", required=True, help="checkpoint folder or hub id")
    sft.add_argument(
        "--data",
        required=True,
        help="turns.jsonl from `train distill`, or tool_chats.jsonl from `train tool-chats`",
    )
    sft.add_argument("--out", required=True, help="output folder (the fine-tuned checkpoint)")
    sft.add_argument("--lr", type=float, default=1.5e-5)
    sft.add_argument("--epochs", type=float, default=3.0)
    sft.add_argument("--batch-size", type=int, default=16, help="global batch")
    sft.add_argument("--per-device-batch", type=int, default=1)
    sft.add_argument("--devices", type=int, default=1, help="data-parallel processes")
    sft.add_argument("--max-steps", type=int, default=-1)
    sft.add_argument("--lora-rank", type=int, default=0, help="LoRA rank (0: full)")
    sft.add_argument(
        "--bf16",
        action="store_true",
        help="bfloat16 mixed precision (without a GPU: CPU autocast, float32 master weights)",
    )
    sft.add_argument("--gradient-checkpointing", action="store_true")
    sft.add_argument("--save-steps", type=int, default=0)
    sft.add_argument("--seed", type=int, default=0)
    sft.add_argument("--quiet", action="store_true", help="no progress bar")
    sft.add_argument(
        "--freeze-vision",
        action="store_true",
        help="keep the vision tower's blocks fixed (its merger still trains)",
    )
    if lab_flags_moved:
        _moved_flags(
            sft,
            *("--option-orders", "--open-answer-repeats", "--recovery-turns"),
            *("--recovery-failures", "--binding", "--binding-open", "--binding-attention-only"),
        )
    sft.add_argument(
        "--freeze-layers",
        type=int,
        default=0,
        metavar="N",
        help="keep the first N decoder layers of the language model as they are",
    )
    sft.add_argument(
        "--context",
        type=int,
        default=0,
        metavar="POSITIONS",
        help="raise the model's context (max_position_embeddings) to this many positions, "
        "for tool chats longer than it was built for; the checkpoint keeps it (0: as is)",
    )
    sft.set_defaults(func=run_sft)
    return cast(argparse.ArgumentParser, sft)


def add_training_commands(kinds: Any) -> None:
    """Add ``distill``, ``tool-chats``, ``sft``, ``rl`` and ``trl`` under ``video-env train``."""
    add_distill_command(kinds)
    add_sft_command(kinds)

    chats = kinds.add_parser(
        "tool-chats",
        help="distilled episodes -> TRL tool-calling chats (SFT data for the `trl` route)",
        description="Replay each kept episode of a `train distill` run through the env TRL's "
        "rollouts call, writing it as one growing tool-calling chat (the thought as text, "
        "the action and notes as a tool call, the next window as the tool's result). Writes "
        "tool_chats.jsonl (+ images/); `train sft --data` takes it.",
    )
    chats.add_argument(
        "--trajectories", required=True, help="trajectories.jsonl of `train distill`"
    )
    chats.add_argument("--out", required=True, help="output folder")
    chats.add_argument("--max-turns", type=int, default=32, help="env steps at most")
    chats.add_argument("--model", help="count each chat's positions with this checkpoint's "
                       "processor, against its context")  # fmt: skip
    _dataset_args(chats)
    chats.set_defaults(func=_tool_chats)

    rl = kinds.add_parser(
        "rl",
        help="multi-turn DAPO in the Pacing env (single process)",
        description="DAPO from a checkpoint (usually the SFT output): G episodes per question, "
        "the env's composite reward, group-relative advantages, decoupled clipping, token-level "
        "normalisation, k3 KL to the frozen start, dynamic sampling. Writes log.jsonl, "
        "checkpoint-N/ and the final model. Defaults are VideoScout's where it gives one.",
    )
    _rl_run_args(rl)
    rl.add_argument("--groups-per-step", type=int, default=4)
    rl.add_argument("--max-draws-per-step", type=int, default=16)
    rl.add_argument("--ppo-epochs", type=int, default=1)
    rl.add_argument("--max-turns", type=int, default=32)
    rl.add_argument("--max-new-tokens", type=int, default=4096,
                    help="tokens per reply at most (the paper's 4,096)")  # fmt: skip
    rl.add_argument("--dynamic-filter", choices=("correctness", "equal-reward"),
                    default="correctness",
                    help="drop groups all correct or all wrong (the paper's), or groups whose "
                    "rewards are all equal (DAPO's)")  # fmt: skip
    rl.add_argument("--overlong", choices=("soft", "filter", "none"), default="soft",
                    help="DAPO soft overlong punishment, overlong filtering, or none")  # fmt: skip
    rl.add_argument("--overlong-buffer", type=int, default=1024,
                    help="tokens before the cap over which the soft punishment ramps")  # fmt: skip
    rl.add_argument("--save-every", type=int, default=0)
    rl.add_argument(
        "--max-seconds",
        type=float,
        help="wall-clock budget: no step starts once it is spent (the run is saved as usual)",
    )
    rl.add_argument("--bf16", action="store_true", help="policy and reference in bfloat16")
    rl.add_argument(
        "--freeze-vision",
        action="store_true",
        help="keep the vision tower's blocks fixed (its merger still trains)",
    )
    _dataset_args(rl)
    _end_note_arg(rl, default=None)
    _question_first_arg(rl, recorded=True)
    rl.add_argument("--guided", action="store_true",
                    help="sample rollouts with legal-action decoding (the loss keeps the free "
                    "model's log-probabilities)")  # fmt: skip
    rl.add_argument("--format-guided", action="store_true",
                    help="sample rollouts with format-guided decoding of the whole reply "
                    "(the loss keeps the free model's log-probabilities; see "
                    "--score-guided)")  # fmt: skip
    rl.add_argument("--score-guided", action="store_true",
                    help="with --format-guided: score each reply under the guided distribution "
                    "it was sampled from (forbidden tokens masked before the softmax)")  # fmt: skip
    rl.add_argument("--resume", action="store_true",
                    help="continue the run in --out from its latest saved state (policy, "
                    "optimizer, steps, question order, random state); give the run's own "
                    "settings, with --steps and --max-seconds counting the whole run")  # fmt: skip
    rl.set_defaults(func=_rl)

    trl = kinds.add_parser(
        "trl",
        help="DAPO through TRL's GRPOTrainer, the env as its tool environment (multi-GPU)",
        description="The Pacing env as TRL's environment_factory: actions are tool calls in a "
        "growing chat, each tool result carries the next window's frames (not the paper's "
        "fresh chat per turn; see docs/training.md). Launch with `accelerate launch` for "
        "several GPUs. Loss: TRL's dapo loss with VideoScout's eps/beta/G/lr.",
    )
    _rl_run_args(trl)
    trl.add_argument("--per-device-batch", type=int, default=0,
                     help="rollouts per device per step (default: G)")  # fmt: skip
    trl.add_argument("--grad-accum", type=int, default=1)
    trl.add_argument("--max-turns", type=int, default=32, help="env steps (tool calls) at most")
    trl.add_argument("--max-completion-length", type=int, default=32768,
                     help="tokens of a rollout: replies and tool results with frames")  # fmt: skip
    trl.add_argument("--max-new-tokens", type=int, default=4096,
                     help="tokens per reply at most (the paper's 4,096; TRL alone would "
                     "allow a reply the whole --max-completion-length)")  # fmt: skip
    trl.add_argument(
        "--save-steps",
        type=int,
        default=0,
        help="save a checkpoint-N (resumable) every N steps (default: at the end)",
    )
    trl.add_argument("--resume", action="store_true",
                     help="continue the run in --out from its latest checkpoint-N (policy, "
                     "optimizer, steps, random state); give the run's own settings, with "
                     "--steps and --max-seconds counting the whole run")  # fmt: skip
    trl.add_argument(
        "--max-seconds",
        type=float,
        help="wall-clock budget: no step starts once it is spent (the run is saved as usual)",
    )
    trl.add_argument("--bf16", action="store_true")
    trl.add_argument(
        "--freeze-vision",
        action="store_true",
        help="keep the vision tower's blocks fixed (its merger still trains)",
    )
    trl.add_argument("--no-gradient-checkpointing", action="store_true")
    trl.add_argument("--use-vllm", action="store_true", help="generate with vLLM (GPU only)")
    trl.add_argument("--vllm-mode", choices=("server", "colocate"), default="colocate")
    trl.add_argument("--env-url", help="run the episodes on a `video-env serve` Pacing server "
                     "(same questions and rules, --pixel-observations, no sensors)")  # fmt: skip
    _dataset_args(trl)
    _end_note_arg(trl, default=None)
    _question_first_arg(trl, recorded=True)
    trl.set_defaults(func=_trl)
