r"""A training recipe over seeds: each seed's run against their common start, per split.

Every run (one seed of one ``video-env train rl`` command) and the start it was trained
from play the VideoScout study (:mod:`experiments.videoscout_pixel.videoscout_pixel`, greedy and
free, pixel-VLM perception) on the validation and the held-out test videos; a run's
episodes are reused from each split's results folder when that study already played them
with the same settings. Per run: its steps, and its paired reward and accuracy against
the start on each split, with 95 % intervals clustered by video; whether it passes the
selection rule set before these runs were evaluated (validation reward's interval above
0, validation accuracy not lower); on test, its format-valid turns and frames.

    python -m experiments.videoscout_pixel.dapo_seeds \
        --start policies/checkpoints/videoscout_pixel_sft \
        --runs policies/checkpoints/videoscout_pixel_dapo runs/rl-pixel-shipped-free-t05-seed1 \
        --calib 8 runs/distill-pixel-calib8-lead/trajectories.jsonl \
            runs/videoscout-pixel-calib-lead \
        --test 6 runs/distill-pixel-test/trajectories.jsonl runs/videoscout-pixel-test-lead

The intervals are over the questions' videos for fixed runs; what a seed moves shows
in the spread of the rows, which few seeds only sketch.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from experiments._docs import update_block
from experiments.videoscout_pixel.videoscout_pixel import (
    build_parser,
    format_interval,
    paired_differences,
    play,
    summarise,
)
from policies.training.rl_state import run_record

__all__ = ["SplitRun", "format_seed_table", "main", "passes_rule", "run_steps", "split_rows"]

#: One split's study: (videos, the teacher's trajectories for the timing T, results folder).
SplitRun = tuple[int, str, str]


def split_rows(
    split: str, study: SplitRun, models: Sequence[str], log: Callable[[str], object] = print
) -> tuple[list[dict[str, Any]], int, argparse.Namespace]:
    """Every model's episodes on ``split`` with the VideoScout study's default settings.

    The defaults (rules, turns, tokens, each checkpoint's recorded prompt layout, free
    decoding) are those of the per-split study blocks, so their kept episodes are reused.

    Args:
        split: ``calib`` or ``test``.
        study: The split's videos, teacher trajectories and results folder.
        models: The checkpoints to play.
        log: Where progress lines go.

    Returns:
        The rows, how many models' rows were reused, and the settings they were played with.
    """
    videos, trajectories, out = study
    argv = ["--split", split, "--videos", str(videos), "--trajectories", trajectories]
    args = build_parser().parse_args([*argv, "--out", out, "--models", *models])
    _, rows, kept = play(args, log=log)
    return rows, kept, args


def passes_rule(diffs: dict[str, list[float]]) -> bool:
    """The selection rule on validation: reward's interval above 0, accuracy not lower.

    Args:
        diffs: A run's :func:`paired_differences` against its start (mean, low, high).
    """
    return diffs["reward"][1] > 0 and diffs["accuracy"][0] >= 0


def run_steps(run: str) -> str:
    """The optimiser steps a run's ``rl.json`` records (``—`` where it has none)."""
    steps = run_record(Path(run)).get("steps_done")
    return "—" if steps is None else str(steps)


def format_seed_table(
    start: str,
    runs: Sequence[str],
    calib: Sequence[dict[str, Any]],
    test: Sequence[dict[str, Any]],
    names: dict[str, str],
) -> list[str]:
    """The Markdown table: one row per run, paired against ``start`` on both splits.

    Args:
        start: The checkpoint every run started from.
        runs: The run folders, one per seed, in the table's order.
        calib: Every model's validation rows.
        test: Every model's test rows.
        names: Row names by run (default: the run's folder).

    Returns:
        The table's lines; the last row is the start's own test means.
    """
    summary = summarise(test)
    lines = [
        "| run | steps | validation: reward − start | accuracy − start | passes the rule "
        "| test: reward − start | accuracy − start | format valid | frames |",
        "|---|---:|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        val, held = paired_differences(calib, start, run), paired_differences(test, start, run)
        lines.append(
            f"| {names.get(run, run)} | {run_steps(run)} | {format_interval(val['reward'])} "
            f"| {format_interval(val['accuracy'])} | {'yes' if passes_rule(val) else 'no'} "
            f"| {format_interval(held['reward'])} | {format_interval(held['accuracy'])} "
            f"| {summary[run]['format_valid'][0]:.2f} | {summary[run]['frames'][0]:.1f} |"
        )
    start_cells = summary[start]
    lines.append(
        f"| {names.get(start, start)} | — | — | — | — | — | — "
        f"| {start_cells['format_valid'][0]:.2f} | {start_cells['frames'][0]:.1f} |"
    )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", required=True, help="the checkpoint every run started from")
    parser.add_argument("--runs", nargs="+", required=True, help="one run folder per seed")
    for split, what in (("calib", "validation"), ("test", "held-out test")):
        parser.add_argument(
            f"--{split}",
            nargs=3,
            required=True,
            metavar=("VIDEOS", "TRAJECTORIES", "OUT"),
            help=f"the {what} videos' count, the teacher's trajectories on them (the "
            "timing reward's T) and the study's results folder (episodes reused from it)",
        )
    parser.add_argument(
        "--label", action="append", default=[], metavar="RUN=TEXT", help="a run's row name"
    )
    parser.add_argument("--block", default="videoscout-pixel-dapo-seeds", help="docs block")
    parser.add_argument(
        "--update-docs", action="store_true", help="rewrite the marked block (in the docs or a log)"
    )
    args = parser.parse_args(argv)
    begin = time.monotonic()
    models = [args.start, *args.runs]
    studies: dict[str, SplitRun] = {
        split: (int(videos), trajectories, out)
        for split, (videos, trajectories, out) in (("calib", args.calib), ("test", args.test))
    }
    calib, kept_calib, settings = split_rows("calib", studies["calib"], models)
    test, kept_test, _ = split_rows("test", studies["test"], models)
    kept = kept_calib + kept_test
    reused = (
        f"; the episodes of {kept} of its {2 * len(models)} policies and splits kept from "
        "earlier runs with the same settings"
        if kept
        else ""
    )
    names = dict(x.split("=", 1) for x in args.label)
    given = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--update-docs"]
    command = shlex.join(["python", "-m", "experiments.videoscout_pixel.dapo_seeds", *given])
    questions = f"{len({r['sample_id'] for r in calib})} and {len({r['sample_id'] for r in test})}"
    block = "\n".join(
        [
            f"Generated by `{command}` ({questions} questions of {studies['calib'][0]} "
            f"validation and {studies['test'][0]} test videos, greedy and free, pacing rules "
            f"`{settings.rules}`, {time.monotonic() - begin:.0f} s for this run on this "
            f"machine{reused}); "
            "differences are paired by question, each with its 95 % interval clustered by "
            "video; format valid and frames are the test means.",
            "",
            *format_seed_table(args.start, args.runs, calib, test, names),
            "",
        ]
    )
    print(block)
    if args.update_docs:
        print(f"updated {update_block(f'<!-- {args.block} -->', f'<!-- /{args.block} -->', block)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
