"""``video-env bench``: run, resume, report and compare episode benchmarks."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from benchmarks.config import ENV_KINDS, EXECUTORS, BenchConfig
from benchmarks.jobs import validate
from benchmarks.summary import BRIEF, to_markdown
from video_env._optional import require

DEFAULT_OUT = "runs"


def _run(args: argparse.Namespace) -> int:
    from benchmarks.run import run_benchmark

    config = BenchConfig(
        suite=args.suite,
        dataset=args.dataset,
        annotations=args.annotations,
        videos=args.videos,
        envs=tuple(ENV_KINDS if "all" in args.envs else args.envs),
        policies=tuple(args.policies),
        llm=args.llm,
        seeds=tuple(args.seeds),
        limit=args.limit,
        perception=args.perception,
    )
    validate(config)  # unknown names fail before anything is created or shown
    out = Path(args.out or os.path.join(DEFAULT_OUT, config.source))
    workers = args.workers or (os.cpu_count() or 1)
    executor = args.executor or ("process" if workers > 1 else "serial")
    bar = _progress(args.quiet)
    try:
        result = run_benchmark(
            config, out, executor=executor, workers=workers, ray_address=args.ray_address,
            plots=not args.no_plots, progress=bar.update if bar else None,
            on_plan=bar.plan if bar else None,
        )  # fmt: skip
    finally:
        if bar:
            bar.close()
    print(
        f"\n{result.new_episodes} episodes run, {result.skipped_episodes} resumed; results in {out}"
    )
    if any(r.get("simulated") for r in result.records):
        print("perception: SIMULATED (synthetic world; not a model's result)")
    print(to_markdown(result.rows, BRIEF))
    return 0


class _Bar:
    """A tqdm progress bar showing the live accuracy."""

    def __init__(self, tqdm: Any) -> None:
        self.bar = tqdm(desc="episodes", unit="ep", dynamic_ncols=True)
        self.graded = self.correct = self.failed = 0

    def plan(self, to_run: int, done: int) -> None:
        self.bar.total = to_run
        self.bar.refresh()

    def update(self, record: dict[str, Any]) -> None:
        if record.get("correct") is not None:
            self.graded += 1
            self.correct += bool(record["correct"])
        self.failed += bool(record.get("error"))
        acc = self.correct / self.graded if self.graded else 0.0
        self.bar.set_postfix(acc=f"{acc:.3f}", failed=self.failed, refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


def _progress(quiet: bool) -> _Bar | None:
    if quiet:
        return None
    return _Bar(require("tqdm", "core", "progress bars").tqdm)


def _report(args: argparse.Namespace) -> int:
    from benchmarks.run import report

    result = report(args.folder, plots=not args.no_plots)
    print(to_markdown(result.rows, BRIEF))
    if result.plots:
        print("plots: " + ", ".join(result.plots))
    return 0


def _compare(args: argparse.Namespace) -> int:
    from benchmarks.compare import compare

    print(compare(args.a, args.b))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``bench`` subcommand."""
    parser = subparsers.add_parser(
        "bench",
        help="run episode benchmarks (default: synth-quick, every env, every offline policy)",
        description="Run policies x environments x datasets; `bench report DIR` and "
        "`bench compare DIR1 DIR2` work on finished runs.",
    )
    parser.add_argument("--suite", default="synth-quick", help="synthetic suite (default)")
    parser.add_argument("--dataset", help="dataset loader name (video-env data list)")
    parser.add_argument("--annotations", help="annotation file or folder of --dataset")
    parser.add_argument("--videos", help="video folder of --dataset")
    parser.add_argument("--envs", nargs="+", default=["all"], choices=[*ENV_KINDS, "all"])
    parser.add_argument(
        "--policies", nargs="+", default=["all"],
        help="names, or all (every offline policy); trained and model-driven policies take "
        "an argument: pacing-maskable-ppo:PATH, pacing-ppo:PATH, pacing-dqn:PATH, "
        "videoscout:qwen2.5-vl:PATH_OR_ID",
    )  # fmt: skip
    parser.add_argument("--llm", help="LLM for prompted policies, e.g. openai:gpt-4o-mini "
                        "(default: none, offline reasoners)")  # fmt: skip
    parser.add_argument("--perception", default="simulated", choices=["simulated"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--limit", type=int, help="first N samples only")
    parser.add_argument("--out", help=f"results folder (default: {DEFAULT_OUT}/<suite>)")
    parser.add_argument("--workers", type=int, help="processes (default: all cores)")
    parser.add_argument("--executor", choices=EXECUTORS, help="default: process if workers > 1")
    parser.add_argument("--ray-address", help="Ray cluster address (default: local Ray)")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=_run)
    actions = parser.add_subparsers(dest="bench_action", metavar="ACTION")
    rep = actions.add_parser("report", help="re-render tables and plots of a results folder")
    rep.add_argument("folder")
    rep.add_argument("--no-plots", action="store_true")
    rep.set_defaults(func=_report)
    cmp = actions.add_parser("compare", help="per (env, policy) deltas between two runs")
    cmp.add_argument("a")
    cmp.add_argument("b")
    cmp.set_defaults(func=_compare)
