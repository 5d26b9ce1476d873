"""``video-env bench``: run, resume, report and compare episode benchmarks."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.config import ENV_KINDS, EXECUTORS, PERCEPTIONS, BenchConfig, RunSettings
from benchmarks.header import footer_notes, header, unread_note
from benchmarks.jobs import validate, video_samples
from benchmarks.plot_style import PLOT_FORMATS, PlotOptions
from benchmarks.progress import TTY_PROGRESS_INTERVAL_S, ProgressBar
from benchmarks.summary import brief_columns, to_markdown
from video_env._optional import require
from video_env.backends.llm.openai_compatible import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_S
from video_env.backends.text import TEXT_EMBEDDERS
from video_env.cli.flags import Flags
from video_env.errors import ConfigError
from video_env.provenance import VIDEO_NOTES

DEFAULT_OUT = "runs"


#: ``bench``'s flags: one per field of what it evaluates and of how it runs.
CONFIG_FLAGS = Flags(
    BenchConfig(),
    skip=("extra",),
    choices={
        "envs": (*ENV_KINDS, "all"),
        "perception": PERCEPTIONS,
        "text_embedder": TEXT_EMBEDDERS,
    },
)
#: The figures' flags, in ``bench`` (its run settings' ``plot``) and ``bench report``.
PLOT_FLAGS = Flags(
    PlotOptions(),
    names={"format": "--plot-format", "dpi": "--plot-dpi"},
    choices={"format": PLOT_FORMATS},
)
RUN_FLAGS = Flags(
    RunSettings(),
    names={f"plot.{path}": flag for path, flag in PLOT_FLAGS.names.items()},
    choices={"executor": EXECUTORS, "plot.format": PLOT_FORMATS},
)


def bench_settings(args: argparse.Namespace) -> tuple[BenchConfig, RunSettings]:
    """What a parsed ``video-env bench`` evaluates and how it runs it."""
    config = CONFIG_FLAGS.build(
        args, envs=ENV_KINDS if "all" in args.envs else tuple(args.envs), llm=_llm_spec(args)
    )
    return config, RUN_FLAGS.build(args)


def _run(args: argparse.Namespace) -> int:
    from benchmarks.run import run_benchmark

    config, settings = bench_settings(args)
    with _warnings_as_lines():
        resolved = validate(config)  # unknown names fail before anything is created or shown
    out = Path(settings.out or os.path.join(DEFAULT_OUT, config.source))
    for flag, value in (("--workers", settings.workers), ("--concurrency", settings.concurrency)):
        if value is not None and value < 1:
            raise ConfigError(f"{flag} must be >= 1, got {value}")
    workers = settings.workers or local_cores()
    executor = settings.executor or ("process" if workers > 1 else "serial")
    if settings.concurrency is not None:  # N episodes in flight in this process (threads)
        if settings.executor not in (None, "thread"):
            raise ConfigError("--concurrency runs the thread executor; drop --executor")
        if settings.workers is not None:
            raise ConfigError("--concurrency sets the episodes in flight; drop --workers")
        executor, workers = "thread", settings.concurrency
    if executor == "serial":  # one episode at a time, whatever --workers says
        workers = 1
    print(header(config, resolved, out, executor, workers), flush=True)
    for label, count in video_samples(config).items():
        if count:
            print(f"  {count} sample(s) {VIDEO_NOTES[label]}", flush=True)
    bar = _progress(settings.quiet, workers)
    try:
        with _warnings_as_lines():
            result = run_benchmark(
                config, out, executor=executor, workers=workers,
                ray_address=settings.ray_address, plots=settings.plot_options,
                fresh=settings.fresh,
                progress=bar.update if bar else None,
                on_plan=bar.plan if bar else None, resolved=resolved,
            )  # fmt: skip
    finally:
        if bar:
            bar.close()
    print("\n" + outcome(result.new_episodes, result.skipped_episodes, out, result.fingerprint))
    for note in footer_notes(result.records):
        print(note)
    unread = unread_note(config, resolved)
    if unread:
        print(unread)
    print(to_markdown(result.rows, brief_columns(result.rows)))
    _warn_llm_failures(result.rows)
    return 0


def local_cores() -> int:
    """CPU cores this process may use (its affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def outcome(new: int, reused: int, out: Path, fingerprint: str) -> str:
    """What the run computed, and what it reused from ``out`` (said plainly)."""
    if new == 0:
        return (
            f"Nothing computed: all {reused} episodes were reused from {out} (same set-up, "
            f"fingerprint {fingerprint}); the tables below are those results. To start over "
            f"add --fresh, or write elsewhere with --out DIR."
        )
    if reused:
        return (
            f"{new} episodes run, {reused} reused from an earlier run in {out} (same set-up, "
            f"fingerprint {fingerprint}; --fresh starts over); results in {out}"
        )
    return f"{new} episodes run; results in {out}"


def _llm_spec(args: argparse.Namespace) -> str | None:
    """``--llm`` with ``--llm-timeout`` / ``--llm-retries`` folded in as spec options."""
    from video_env.backends.llm.factory import with_llm_options

    if args.llm_timeout is None and args.llm_retries is None:
        return args.llm  # type: ignore[no-any-return]
    if not args.llm:
        raise ConfigError("--llm-timeout and --llm-retries need --llm")
    return with_llm_options(args.llm, timeout_s=args.llm_timeout, max_retries=args.llm_retries)


def _warn_llm_failures(rows: list[dict[str, Any]]) -> None:
    """Say so when LLM replies failed: those results are (partly) offline fallbacks."""
    failed = sum(int(r.get("llm_reply_failures") or 0) for r in rows)
    if failed:
        print(
            f"warning: {failed} LLM replies could not be used; the policies fell back to "
            "their offline reasoning there (llm_reply_failures in summary.csv; rows marked "
            "'(offline fallback)' never got an LLM reply)",
            file=sys.stderr,
        )


def _plot_options(args: argparse.Namespace) -> PlotOptions | bool:
    """The figures' options, or False under ``--no-plots``."""
    return False if args.no_plots else PLOT_FLAGS.build(args)


#: Seconds between two progress lines when stderr is a file or a pipe (a CI log), not a
#: terminal: there every redraw is a new line.
LOG_PROGRESS_INTERVAL_S = 30.0


def _progress(quiet: bool, workers: int) -> ProgressBar | None:
    if quiet:
        return None
    tqdm = require("tqdm", "core", "progress bars").tqdm
    interval = TTY_PROGRESS_INTERVAL_S if sys.stderr.isatty() else LOG_PROGRESS_INTERVAL_S
    return ProgressBar(tqdm, workers, mininterval=interval)


@contextlib.contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """Show the run's and its dataset's warnings as ``warning: ...`` lines on stderr.

    :class:`BenchWarning` and the loaders' reports (missing videos, skipped records) are a
    user's news, not a Python program's: no source line after them.
    """
    from benchmarks.records import BenchWarning
    from video_env.data import MissingVideosWarning, SkippedRecordsWarning

    ours = (BenchWarning, MissingVideosWarning, SkippedRecordsWarning)
    shown = warnings.showwarning

    def show(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
        if issubclass(category, ours):
            print(f"warning: {message}", file=sys.stderr)
        else:
            shown(message, category, *args, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("always", BenchWarning)
        warnings.showwarning = show
        yield


def _report(args: argparse.Namespace) -> int:
    from benchmarks.run import report

    with _warnings_as_lines():
        result = report(args.folder, plots=_plot_options(args))
    print(to_markdown(result.rows, brief_columns(result.rows)))
    _warn_llm_failures(result.rows)
    if result.plots:
        print("plots: " + ", ".join(result.plots))
    return 0


def _compare(args: argparse.Namespace) -> int:
    from benchmarks.compare import compare

    with _warnings_as_lines():
        text = compare(args.a, args.b)
    print(text)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``bench`` subcommand."""
    parser = subparsers.add_parser(
        "bench",
        help="run episode benchmarks (default: synth-quick, every env, every offline policy)",
        description="Run policies x environments x datasets; `bench report DIR` and "
        "`bench compare DIR1 DIR2` work on finished runs.",
    )
    CONFIG_FLAGS.add(parser)
    # the LLM client's options, folded into --llm's spec (_llm_spec); defaults: the client's
    for flag, kind, metavar, what, default in (
        ("--llm-timeout", float, "SECONDS", "seconds one LLM request may take", DEFAULT_TIMEOUT_S),
        ("--llm-retries", int, "N", "retries of a failed LLM request", DEFAULT_MAX_RETRIES),
    ):
        parser.add_argument(flag, type=kind, metavar=metavar, help=f"{what} (default {default:g})")
    RUN_FLAGS.add(parser)
    parser.set_defaults(func=_run)
    actions = parser.add_subparsers(dest="bench_action", metavar="ACTION")
    rep = actions.add_parser(
        "report", help="re-render tables and plots of a results folder",
        description="Rewrite summary.csv, summary.md, categories.csv and the plots of a "
        "results folder from its episodes.jsonl (nothing is rerun).",
    )  # fmt: skip
    rep.add_argument("folder", help="a results folder written by `video-env bench --out`")
    rep.add_argument("--no-plots", action="store_true", help="tables only")
    PLOT_FLAGS.add(rep)
    rep.set_defaults(func=_report)
    cmp = actions.add_parser(
        "compare", help="paired differences (B - A) between two runs, with bootstrap CIs",
        description="For each (env, policy) both runs have: B - A of accuracy (paired by "
        "question, 95 % bootstrap CI), GToU and costs; says when the runs' set-ups differ.",
    )  # fmt: skip
    cmp.add_argument("a", help="results folder A (the baseline)")
    cmp.add_argument("b", help="results folder B (compared with A)")
    cmp.set_defaults(func=_compare)
