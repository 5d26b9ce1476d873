"""The fixed pacing schedules on a suite's held-out videos under the pixel VLM's perception.

``python -m experiments.pacing_suite.separation --suite synth-visible`` plays each fixed
schedule (``pacing-1x``, ``pacing-4x``, ``pacing-2x@0.8`` by default) on the suite's
four-option questions in the Pacing env with the ``pixel-vlm`` rules preset (the paper's
frame counts at the pixel VLM's 16:9 size) and the pixel VLM as the env's sensor — the
setting in which the VideoScout-pixel study measured ``pacing-threshold`` at 0.27 — and
writes the separation table: accuracy, frames and turns with 95 % intervals clustered by
video, the paired ``pacing-1x`` − ``pacing-4x`` difference, and why answers are right:
the share of right answers read on a window that overlaps the question's evidence, and
the accuracy of answers read on such windows and on others.

It also measures whether the pixel VLM reads the suite at all
(:func:`legibility`, ``--legibility``): MCQ accuracy from 4 frames inside each needle
against a needle-free window and another needle's window, the harness of
:mod:`experiments.pixel_models.pixel_vlm_eval`. The suite's videos are held out from the
pixel VLM's training videos by construction (:func:`video_env.pixel.splits.split_video`
refuses a seed any suite uses). Results are real inference of the tiny pixel VLM on
rendered frames, labelled ``pixel-vlm``; never a real benchmark model's.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments.videoscout_pixel.videoscout_pixel import (
    evidence_sighting,
    paired_differences,
    record_values,
)
from video_env.metrics.bootstrap import cluster_bootstrap_ci
from video_env.types import VideoQA

__all__ = [
    "evidence_row",
    "format_separation",
    "legibility",
    "main",
    "mean_interval",
    "separation",
]

POLICIES = ("pacing-1x", "pacing-4x", "pacing-2x@0.8")
COLUMNS = ("accuracy", "frames", "turns")


def evidence_row(name: str, sample: VideoQA, record: dict[str, Any]) -> dict[str, Any]:
    """One episode's values: correctness, cost, and whether its answer window met the evidence.

    ``on_evidence`` reads the answer's window (the window whose reading the schedule
    answered with) against the question's ground-truth windows — the study's privilege,
    never the policy's; ``evidence_shown`` (:func:`record_values`) whether any window
    shown did.
    """
    window = record.get("window")
    answered = {"explored": [[window[0], window[1], "answer"]] if window else []}
    return {
        **record_values(name, sample, record),
        "on_evidence": bool(evidence_sighting(sample, answered)["evidence_shown"]),
    }


def separation(
    samples: Sequence[VideoQA], policies: Sequence[str] = POLICIES, log: Any = print
) -> list[dict[str, Any]]:
    """Rows of every policy's episodes on ``samples`` (pixel-vlm rules and perception)."""
    from experiments.videoscout_pixel.videoscout_pixel import play_episodes
    from policies.registry import make
    from video_env.envs.pacing_rules import pixel_vlm_rules
    from video_env.envs.perception import Perception

    perception = Perception.pixel_vlm()
    rows: list[dict[str, Any]] = []
    for name in policies:
        policy = make(name)
        env_kwargs = {
            **policy.env_kwargs.get("pacing", {}),
            "rules": pixel_vlm_rules(),
            "perception": perception,
        }
        row = lambda s, r, n=name: evidence_row(n, s, r)  # noqa: E731
        rows += play_episodes(policy, samples, env_kwargs, row, max_turns=64, log=log)
    return rows


def mean_interval(values: Sequence[float], videos: Sequence[str]) -> list[float]:
    """The mean of ``values`` and its 95 % interval clustered by video, rounded."""
    low, high = cluster_bootstrap_ci(list(values), list(videos))
    return [round(float(np.mean(values)), 3), round(low, 3), round(high, 3)]


def paired_accuracy(rows: Sequence[dict[str, Any]], first: str, second: str) -> list[float]:
    """``second`` − ``first`` accuracy over the questions both played: mean, clustered 95 % CI.

    Raises:
        ValueError: If the two policies share no question.
    """
    return paired_differences(rows, first, second)["accuracy"]


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per policy the columns' means and clustered intervals, the evidence shares, the pair."""
    out: dict[str, Any] = {"policies": {}}
    for name in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == name]
        videos = [r["video"] for r in mine]
        cells: dict[str, Any] = {"episodes": len(mine), "videos": len(set(videos))}
        for column in COLUMNS:
            cells[column] = mean_interval([r[column] for r in mine], videos)
        right = [r for r in mine if r["accuracy"]]
        on = [r for r in mine if r["on_evidence"]]
        off = [r for r in mine if not r["on_evidence"]]
        cells["right_on_evidence"] = (
            round(float(np.mean([r["on_evidence"] for r in right])), 3) if right else None
        )
        cells["acc_on_evidence"] = [
            len(on),
            round(float(np.mean([r["accuracy"] for r in on])), 3) if on else None,
        ]
        cells["acc_off_evidence"] = [
            len(off),
            round(float(np.mean([r["accuracy"] for r in off])), 3) if off else None,
        ]
        out["policies"][name] = cells
    names = list(out["policies"])
    if "pacing-1x" in names and "pacing-4x" in names:
        out["paired_4x_minus_1x"] = paired_accuracy(rows, "pacing-1x", "pacing-4x")
    return out


def format_separation(summary: dict[str, Any]) -> list[str]:
    """Markdown lines: the separation table and the paired difference."""
    lines = [
        "| policy | questions (videos) | accuracy (95 % CI) | frames | turns | right answers read "
        "on the evidence | accuracy on / off the evidence (n) |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for name, c in summary["policies"].items():
        acc = c["accuracy"]
        on, off = c["acc_on_evidence"], c["acc_off_evidence"]
        lines.append(
            f"| {name} | {c['episodes']} ({c['videos']}) "
            f"| {acc[0]:.2f} ({acc[1]:.2f}–{acc[2]:.2f}) "
            f"| {c['frames'][0]:.0f} | {c['turns'][0]:.1f} | {c['right_on_evidence']} "
            f"| {on[1]} ({on[0]}) / {off[1]} ({off[0]}) |"
        )
    pair = summary.get("paired_4x_minus_1x")
    if pair:
        mean, low, high = pair
        lines += [
            "",
            f"Paired accuracy, pacing-4x − pacing-1x (95 % interval clustered by "
            f"video): {mean:+.2f} ({low:+.2f} to {high:+.2f}).",
        ]
    return lines


def legibility(videos: Sequence[Any]) -> dict[str, Any]:
    """The pixel VLM's MCQ accuracy with the evidence on screen and without, on ``videos``."""
    from experiments.pixel_models.pixel_vlm_eval import evaluate
    from experiments.pixel_models.pixel_vlm_eval import summarise as eval_summary
    from video_env.backends.transformers_vlm import TransformersVLM
    from video_env.pixel import PIXEL_VLM_DIR

    vlm = TransformersVLM(str(PIXEL_VLM_DIR), device="cpu")
    single = {v.id for v in videos if len(v.needles) < 2}  # no other needle's window
    rows = [
        r
        for r in evaluate(vlm, videos)
        if r["task"] == "mcq" and not (r["condition"] == "other" and r["video"] in single)
    ]
    table = eval_summary(rows)["table"]
    return {k: v for k, v in table.items() if k.endswith("/read")}


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    from video_env.synth.suites import load_suite, suite_videos

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="synth-visible")
    parser.add_argument(
        "--policies", nargs="*", default=list(POLICIES), help="none: the legibility check only"
    )
    parser.add_argument("--limit", type=int, help="first N questions only")
    parser.add_argument(
        "--legibility", action="store_true", help="also the on/off-screen MCQ check"
    )
    parser.add_argument("--out", default="runs/pacing-suite/separation")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    report: dict[str, Any] = {"suite": args.suite}
    if args.legibility:
        report["legibility"] = legibility(suite_videos(args.suite))
        print(json.dumps(report["legibility"], indent=1))
    if args.policies:
        samples = load_suite(args.suite, forms=("mcq",), limit=args.limit)
        rows = separation(samples, args.policies)
        (out / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
        report["separation"] = summarise(rows)
        print("\n".join(format_separation(report["separation"])))
    report["seconds"] = round(time.monotonic() - start, 1)
    (out / "summary.json").write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    print(f"({report['seconds']:.0f} s; summary in {out})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
