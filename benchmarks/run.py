"""A benchmark run: plan, resume, execute, log, summarise, plot."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.config import BenchConfig
from benchmarks.executors import execute
from benchmarks.header import perception_text, unread_note
from benchmarks.jobs import (
    Job,
    check_workers_can_build,
    plan,
    samples_for,
    validate,
    video_samples,
)
from benchmarks.plot_style import PLOT_FILES, PlotOptions
from benchmarks.provenance import (
    differences,
    fingerprint,
    git_commit,
    policy_perceptions,
    provenance,
)
from benchmarks.records import (
    EPISODES,
    EpisodeLog,
    EpisodeLogWarning,
    dedupe,
    write_json,
)
from benchmarks.run_files import open_run_file, write_atomic
from benchmarks.run_folder import (
    RUN_JSON,
    plan_entry,
    planned_records,
    read_run_json,
)
from benchmarks.summary import (
    CATEGORY_COLUMNS,
    COLUMNS,
    TIMING_COLUMNS,
    by_category,
    summarize,
    to_csv,
    to_markdown,
)
from policies.resolved import ResolvedPolicy
from video_env.errors import BackendNotInstalled, ConfigError
from video_env.provenance import FLAGS, VIDEO_NOTES, Provenance, perception_notes

#: What a run writes into its folder (``--fresh`` removes these, and nothing else).
OUTPUTS = (EPISODES, RUN_JSON, "summary.csv", "summary.md", "categories.csv", "timing.csv",
           *PLOT_FILES)  # fmt: skip


@dataclass
class RunResult:
    """What a run produced."""

    folder: Path
    records: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    new_episodes: int
    skipped_episodes: int
    plots: list[str]
    fingerprint: str = ""


def run_benchmark(
    config: BenchConfig,
    out: str | os.PathLike[str],
    *,
    executor: str = "serial",
    workers: int = 1,
    ray_address: str | None = None,
    plots: bool | PlotOptions = True,
    fresh: bool = False,
    progress: Callable[[dict[str, Any]], None] | None = None,
    on_plan: Callable[[list[Job], int], None] | None = None,
    resolved: tuple[ResolvedPolicy, ...] | None = None,
) -> RunResult:
    """Run (or resume) a benchmark into ``out`` and write its tables and plots.

    ``on_plan(jobs_to_run, already_done)`` is called once the jobs are known; ``progress`` with
    each new record. ``resolved``: what :func:`~benchmarks.jobs.validate` returned for this
    config, if the caller validated it already (the CLI does, for its header).

    Episodes already in ``out/episodes.jsonl`` are skipped, so an interrupted run resumes,
    but only when they were produced by the same set-up (same fingerprint, see
    :mod:`benchmarks.provenance`). ``fresh=True`` first removes the folder's previous
    results (the files of :data:`OUTPUTS`).

    Raises:
        ConfigError: If ``out`` holds results of a different set-up (the message names
            each difference), or the config names nothing to run.
    """
    if resolved is None:
        resolved = validate(config)  # before anything is created: each name resolved once
    check_workers_can_build(resolved, executor)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    with _exclusive(folder):
        if fresh:
            for name in OUTPUTS:
                (folder / name).unlink(missing_ok=True)
        return _run_locked(
            config, resolved, folder, executor, workers, ray_address, plots, progress, on_plan
        )


def _run_locked(
    config: BenchConfig,
    resolved: tuple[ResolvedPolicy, ...],
    folder: Path,
    executor: str,
    workers: int,
    ray_address: str | None,
    plots: bool | PlotOptions,
    progress: Callable[[dict[str, Any]], None] | None,
    on_plan: Callable[[list[Job], int], None] | None,
) -> RunResult:
    samples = samples_for(config)
    origin = provenance(config, samples, resolved)
    fp = fingerprint(origin)
    log = EpisodeLog(folder)
    planned = plan(config, samples, resolved)
    # any line at all asks for the same set-up, planned or not: a run with other seeds or
    # policies would otherwise share no job with the old records and append beside them
    _check_same_setup(folder, origin, fp, log.holds_lines())
    # only records of this plan count (a line pasted from another run is skipped, with a
    # warning); a job whose worker died (a ``lost`` record) is rerun: resuming completes it
    records = dedupe(log.load(repair=True, jobs={j.key for j in planned}))
    done = {r["job"] for r in records if not r.get("lost")}
    jobs = [j for j in planned if j.key not in done]
    if on_plan is not None:
        on_plan(jobs, len(done))
    meta = _run_meta(config, resolved, origin, fp, executor, workers, len(jobs) + len(done))
    meta["plan"] = plan_entry(planned)
    meta.update({f"{FLAGS[label]}_samples": n for label, n in video_samples(config).items()})
    write_json(folder / RUN_JSON, meta)
    started = time.perf_counter()
    for record in execute(executor, config.to_dict(), jobs, workers, ray_address):
        log.append(record)
        if progress is not None:
            progress(record)
    meta["run_wall_s"] = time.perf_counter() - started
    meta["finished"] = _now()
    with warnings.catch_warnings():  # its bad lines were reported when it was loaded above
        warnings.simplefilter("ignore", EpisodeLogWarning)
        finished = planned_records(folder, meta)
        counts = Provenance.of(finished).counts
        for label, note in VIDEO_NOTES.items():  # standin_episodes, standin_note, ...
            meta[f"{FLAGS[label]}_episodes"] = counts.get(label, 0)
            meta[f"{FLAGS[label]}_note"] = note if counts.get(label) else None
        write_json(folder / RUN_JSON, meta)
        result = report(folder, plots=plots, records=finished)
    result.new_episodes, result.skipped_episodes = len(jobs), len(done)
    result.fingerprint = fp
    return result


def report(
    folder: str | os.PathLike[str],
    plots: bool | PlotOptions = True,
    records: list[dict[str, Any]] | None = None,
) -> RunResult:
    """(Re)write the tables and plots of a results folder from its records.

    Only records of the jobs its ``run.json`` planned count (see
    :func:`~benchmarks.run_folder.planned_records`); ``records`` are those, already
    read (``None``: read them from the folder).

    Raises:
        ConfigError: If the folder holds no records, or its ``run.json`` is damaged.
    """
    path = Path(folder)
    meta = read_run_json(path, missing_ok=True)
    if records is None:
        records = planned_records(path, meta)
    if not records:
        raise ConfigError(f"{path} holds no episode records")
    rows, categories = summarize(records), by_category(records)
    write_atomic(path / "summary.csv", to_csv(rows, COLUMNS))
    write_atomic(path / "summary.md", _markdown(records, rows, categories, meta))
    write_atomic(path / "categories.csv", to_csv(categories, CATEGORY_COLUMNS))
    write_atomic(path / "timing.csv", to_csv(rows, TIMING_COLUMNS))
    written: list[str] = []
    if plots:
        from benchmarks.plots import plot_all

        try:
            options = plots if isinstance(plots, PlotOptions) else None
            written = plot_all(path, records, rows, categories, options)
        except BackendNotInstalled as exc:
            print(f"plots skipped: {exc}")
    return RunResult(path, records, rows, 0, 0, written)


def setup_line(meta: dict[str, Any]) -> str:
    """One line naming a run's set-up from its ``run.json`` (empty when unknown)."""
    config = meta.get("config")
    if not config:
        return ""
    source = config.get("dataset") or config.get("suite")
    seeds = " ".join(str(s) for s in config.get("seeds", []))
    # run.json's own label (real only when no role is simulated); the config's legacy
    # ``perception`` field is always "simulated", whatever the backends.
    perception = meta.get("perception") or config.get("perception")
    return (
        f"Set-up: {source}, seeds {seeds}, perception {perception}, "
        f"text embedder {config.get('text_embedder') or meta.get('text_embedder', '?')}, "
        f"LLM {config.get('llm') or 'none (offline reasoners)'}"
    )


def _bold_label(note: str) -> str:
    """A provenance note with its capitalised label in bold (``Perception: **SIMULATED**``)."""
    return re.sub(r"^(Perception: )?([A-Z][A-Z ()-]+[A-Z)])(?=[ :])", r"\1**\2**", note, count=1)


def _markdown(
    records: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    cats: list[dict[str, Any]],
    meta: dict[str, Any],
) -> str:
    head = "# Benchmark results\n\n"
    if setup_line(meta):
        head += setup_line(meta) + " (the full set-up and its fingerprint: run.json).\n\n"
    notes = perception_notes(records, meta.get("random_weights") or ())
    unread = meta.get("pixel_vlm_unread_note")
    notes += [unread] if isinstance(unread, str) else []
    head += "".join(f"> {_bold_label(note)}\n\n" for note in notes)
    return (
        head
        + to_markdown(rows, COLUMNS)
        + "\n## Per category\n\n"
        + to_markdown(cats, CATEGORY_COLUMNS)
        + "\nWall times depend on the machine and its load: they are in timing.csv.\n"
    )


@contextlib.contextmanager
def _exclusive(folder: Path) -> Iterator[None]:
    """Hold ``folder/.lock`` for the run: a second run on the same folder fails at once.

    The lock is an OS file lock, released by the kernel if the process dies, so a killed
    run never blocks its own resumption. The file is opened without following a link and
    never truncated (:mod:`benchmarks.run_files`).
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no protection, as documented
        yield
        return
    with open_run_file(folder / ".lock", "lock") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise ConfigError(f"another run is writing to {folder}") from None
        yield


def _check_same_setup(folder: Path, origin: dict[str, Any], fp: str, has_lines: bool) -> None:
    """Refuse to add to results that another set-up produced, naming what differs.

    Any line of the log counts, whether or not this run plans its job (other seeds or
    policies are another set-up). A folder without one (a run that failed before its
    first episode, e.g. on a wrong backend spec) holds nothing to mix: its ``run.json``
    is simply rewritten.
    """
    if not has_lines:
        return
    previous = read_run_json(folder, missing_ok=True)
    if previous.get("fingerprint") == fp:
        return
    if "provenance" in previous:
        diff = differences(previous["provenance"], origin)
    elif previous:
        diff = ["the folder's run.json predates provenance tracking (no record of its set-up)"]
    else:
        diff = [f"the folder holds {EPISODES} but no {RUN_JSON} (unknown set-up)"]
    listed = "; ".join(diff[:8]) + (f"; and {len(diff) - 8} more" if len(diff) > 8 else "")
    raise ConfigError(
        f"{folder} holds results of a different set-up ({listed}); resuming would mix "
        "them. Start over with --fresh (deletes that folder's results) or write elsewhere "
        "with --out DIR"
    )


def _run_meta(
    config: BenchConfig,
    resolved: tuple[ResolvedPolicy, ...],
    origin: dict[str, Any],
    fp: str,
    executor: str,
    workers: int,
    episodes: int,
) -> dict[str, Any]:
    return {
        "config": config.to_dict(),
        "fingerprint": fp,
        "provenance": origin,
        "executor": executor,
        "workers": workers,
        "episodes": episodes,
        "started": _now(),
        "perception": perception_text(config, resolved),
        "policy_perception": policy_perceptions(config, resolved),
        "pixel_vlm_unread_note": unread_note(config, resolved),
        "random_weights": config.random_weight_sources(),
        "backends": {**config.perception_specs(), "judge": config.judge or "exact"},
        "simulated_backends": config.simulated_roles(),
        "text_embedder": config.text_embedder,
        "llm": config.llm,
        "llm_client": _llm_client(config.llm),
        "versions": _versions(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git_commit": git_commit(),
    }


def _llm_client(spec: str | None) -> dict[str, Any] | None:
    """Timeout and retries of an OpenAI-compatible LLM (from its spec, else the defaults)."""
    if not spec or spec.startswith("local:"):
        return None
    from video_env.backends.llm import openai_compatible
    from video_env.backends.llm.factory import split_llm_spec

    _, options = split_llm_spec(spec)
    return {
        "timeout_s": options.get("timeout_s", openai_compatible.DEFAULT_TIMEOUT_S),
        "max_retries": options.get("max_retries", openai_compatible.DEFAULT_MAX_RETRIES),
    }


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in ("video-env", "numpy", "gymnasium", "torch", "transformers", "openai", "ray"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
