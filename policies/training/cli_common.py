"""What the ``video-env train`` commands share: the questions, rules and prompt they run on."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from policies.videoscout.prompt import END_NOTE_PLACES, PromptLayout
from policies.videoscout.record import trained_layout, trained_rules
from video_env.envs.arguments import DEFAULT_SUITE
from video_env.envs.pacing_rules import PacingRules, SpeedSpec, pixel_vlm_rules
from video_env.errors import ConfigError
from video_env.types import VideoQA

__all__ = [
    "EPISODE_FLAGS_SET_BY_HAND",
    "RULES",
    "SCRIPTED_TEACHER",
    "dataset_args",
    "end_note_arg",
    "episode_by_hand",
    "layout_from_args",
    "pacing_rules",
    "question_first_arg",
    "samples_from_args",
    "split_samples",
]

SCRIPTED_TEACHER = "scripted-ground-truth"

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
    """The questions ``--split``, ``--dataset`` or ``--suite`` name, of ``--forms``' forms.

    ``--limit`` keeps the first N questions after the form filter.
    """
    forms = getattr(args, "forms", "both")
    if args.split:
        samples = split_samples(args.split, args.videos)
    elif args.dataset:
        from video_env.data import load

        if not args.annotations:
            raise ConfigError("--dataset needs --annotations")
        samples = list(load(args.dataset, args.annotations, args.video_root))
    else:
        from video_env.synth.suites import load_suite

        samples = load_suite(args.suite)
    if forms != "both":
        samples = [sample for sample in samples if (sample.options is not None) == (forms == "mcq")]
    return samples[: args.limit] if args.limit else samples


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


#: Episode settings the commands set from other flags (``--rules``, ``--end-note``,
#: ``--question-first``) or not at all, so :func:`~video_env.cli.flags.add_flags` adds none.
EPISODE_FLAGS_SET_BY_HAND = (
    "episode.rules",
    "episode.layout",
    "episode.env_kwargs",
    "episode.strict",
)


def end_note_arg(parser: argparse.ArgumentParser, default: str | None = "window") -> None:
    """Add ``--end-note`` (``None``: the start model's recorded place, else ``window``)."""
    where = (
        "default: the one recorded in --model's folder, else window"
        if default is None
        else (f"default: {default}")
    )
    parser.add_argument("--end-note", choices=END_NOTE_PLACES, default=default,
                        help="where VideoScout's prompt says that a window ends the video "
                        "(window: its window line; last: the prompt's last line; off: the "
                        f"paper's plain prompt; {where})")  # fmt: skip


def question_first_arg(parser: argparse.ArgumentParser, recorded: bool) -> None:
    """Add ``--question-first`` (``recorded``: default to the start model's record)."""
    default = "the one recorded in --model's folder, else off" if recorded else "off"
    parser.add_argument("--question-first", action=argparse.BooleanOptionalAction,
                        default=None if recorded else False,
                        help="VideoScout's prompt puts the question and its options before "
                        "the frames, the memory after them (the paper: frames, memory, "
                        f"question; default: {default})")  # fmt: skip


def episode_by_hand(args: argparse.Namespace) -> dict[str, Any]:
    """The episode settings the rules and layout flags give (``from_flags``'s ``given``)."""
    return {"episode__rules": pacing_rules(args), "episode__layout": layout_from_args(args)}


def layout_from_args(args: argparse.Namespace) -> PromptLayout:
    """``--end-note`` and ``--question-first``, else the start model's record, else defaults."""
    model = getattr(args, "model", None)
    if model is None:  # distill: a teacher, no start model
        return PromptLayout(args.end_note, args.question_first)
    return trained_layout(model, end_note=args.end_note, question_first=args.question_first)


def dataset_args(parser: argparse.ArgumentParser) -> None:
    """Add the questions' flags (suite, dataset or pixel split), ``--rules`` and ``--seed``."""
    parser.add_argument("--suite", default=DEFAULT_SUITE, help="synthetic suite (default)")
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
    parser.add_argument(
        "--forms",
        choices=("both", "mcq", "open"),
        default="both",
        help="multiple-choice questions only, open ones only, or both",
    )
    parser.add_argument("--limit", type=int, help="first N questions (after --forms)")
    parser.add_argument(
        "--rules",
        choices=sorted(RULES),
        help="pacing preset (default: the rules recorded in --model's folder, else paper)",
    )
    parser.add_argument("--seed", type=int, default=0)
