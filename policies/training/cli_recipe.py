"""``video-env train distill | tool-chats | sft``: teacher turns, tool chats and the SFT.

Each command's flags and defaults come from its settings (:mod:`video_env.cli.flags`):
``distill`` from :class:`~policies.training.distill.DistillConfig` and its episodes'
:class:`~policies.episode_settings.EpisodeSettings`, ``sft`` from
:class:`~policies.training.sft.SFTSettings`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from policies.episode_settings import EpisodeSettings
from policies.training.cli_common import (
    EPISODE_FLAGS_SET_BY_HAND,
    RULES,
    SCRIPTED_TEACHER,
    dataset_args,
    end_note_arg,
    episode_by_hand,
    question_first_arg,
    samples_from_args,
)
from policies.training.distill import DistillConfig
from policies.training.sft import SFTSettings
from policies.videoscout.record import trained_layout, trained_rules
from video_env.cli.flags import Flags
from video_env.envs.pacing_rules import PacingRules
from video_env.run_record import command_line

if TYPE_CHECKING:
    from policies.training.sft_extension import SFTExtension

__all__ = [
    "add_recipe_commands",
    "add_tool_chats_command",
    "run_distill",
    "run_sft",
    "run_tool_chats",
    "teacher_from_spec",
]

#: The episode settings ``tool-chats`` takes no flag for (its one: the env steps of a replay).
_ONLY_TURNS = (
    *("rules", "layout", "max_new_tokens", "temperature", "strict", "guided", "format_guided"),
    "env_kwargs",
)
#: ``distill``'s flags: the run's and its episodes' but those set from other flags.
DISTILL_FLAGS = Flags(
    DistillConfig(),
    skip=("seed", *EPISODE_FLAGS_SET_BY_HAND, "episode.guided", "episode.format_guided"),
)
#: ``tool-chats``' flags: the env steps of a replay.
TOOL_CHATS_FLAGS = Flags(EpisodeSettings(), skip=_ONLY_TURNS)
#: ``sft``'s flags (``--quiet`` sets the progress bar).
SFT_FLAGS = Flags(SFTSettings(), names={"learning_rate": "--lr"}, skip=("progress_bar",))


def teacher_from_spec(spec: str, mistake_rate: float = 0.0) -> Any:
    """The teacher ``--teacher`` names: a VLM spec or the ground-truth scripted teacher."""
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
    from policies.training.distill import distill

    config = DISTILL_FLAGS.build(args, **episode_by_hand(args))
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


def run_tool_chats(args: argparse.Namespace) -> int:
    """``train tool-chats`` with ``args``."""
    from policies.training.tool_chats import write_tool_chats

    folder = Path(args.trajectories).parent  # the distill run's rules and layout
    recorded = trained_rules(folder)
    rules = RULES[args.rules]() if args.rules else recorded or PacingRules()
    layout = trained_layout(folder)
    episode = TOOL_CHATS_FLAGS.build(args, rules=rules, layout=layout)
    result = write_tool_chats(
        args.trajectories,
        samples_from_args(args),  # as the teacher played them (its reward is the replay's check)
        args.out,
        episode,
        seed=args.seed,
    )
    left = len(result.skipped)
    print(f"tool chats: {result.chats} written, {left} left out; {result.images} images")
    print(f"data: {result.path}")
    if args.model and result.chats:
        print_positions(args.model, result.path)
    for sample_id, why in list(result.skipped.items())[:10]:
        print(f"  left out {sample_id}: {why}")
    return 0


def print_positions(model: str, chats: Path) -> None:
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
    from policies.training.sft import train_sft

    settings = SFT_FLAGS.build(args, progress_bar=not args.quiet)
    result = train_sft(
        args.model, args.data, args.out, settings, devices=args.devices, extension=extension
    )
    first, last = (result.losses[0], result.losses[-1]) if result.losses else (0.0, 0.0)
    print(f"SFT: {result.steps} steps, loss {first:.4f} -> {last:.4f}; model: {result.output_dir}")
    return 0


def add_recipe_commands(
    kinds: Any,
) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """Add ``distill`` and ``sft`` (handlers :func:`run_distill`, :func:`run_sft`).

    Args:
        kinds: The subparsers to add them to.

    Returns:
        The ``distill`` and ``sft`` parsers.
    """
    return _add_distill(kinds), _add_sft(kinds)


def _add_distill(kinds: Any) -> argparse.ArgumentParser:
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
        "tests and demos only)"
    )
    distill.add_argument("--teacher", required=True, help=teacher_help)
    distill.add_argument("--out", required=True, help="output folder")
    DISTILL_FLAGS.add(distill)
    distill.add_argument("--mistake-rate", type=float, default=0.0,
                         help=f"wrong answers of the {SCRIPTED_TEACHER} teacher")  # fmt: skip
    end_note_arg(distill)
    question_first_arg(distill, recorded=False)
    dataset_args(distill)
    distill.set_defaults(func=run_distill)
    return cast(argparse.ArgumentParser, distill)


def add_tool_chats_command(kinds: Any) -> None:
    """Add ``tool-chats`` (its handler: :func:`run_tool_chats`)."""
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
    TOOL_CHATS_FLAGS.add(chats)
    chats.add_argument("--model", help="count each chat's positions with this checkpoint's "
                       "processor, against its context")  # fmt: skip
    dataset_args(chats)
    chats.set_defaults(func=run_tool_chats)


def _add_sft(kinds: Any) -> argparse.ArgumentParser:
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
    SFT_FLAGS.add(sft)
    sft.add_argument("--quiet", action="store_true", help="no progress bar")
    sft.add_argument("--devices", type=int, default=1, help="data-parallel processes")
    sft.set_defaults(func=run_sft)
    return cast(argparse.ArgumentParser, sft)
