"""Executors: run jobs serially, on a local process pool, or as Ray tasks."""

from __future__ import annotations

import multiprocessing
import os
import select
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from benchmarks.config import EXECUTORS
from benchmarks.jobs import Job, lost_job_record, run_job, run_jobs
from benchmarks.records import BenchWarning
from video_env._optional import require
from video_env.errors import ConfigError, UnknownNameError


def execute(
    name: str,
    config: dict[str, Any],
    jobs: Sequence[Job],
    workers: int,
    ray_address: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield the record of every job as it finishes (in any order).

    Args:
        name: ``serial``, ``process``, ``ray`` or ``thread``.
        config: The run's :class:`BenchConfig` as a dict.
        jobs: Jobs to run.
        workers: Processes (``process``), CPUs requested (``ray``) or episodes in flight
            (``thread``, see :mod:`benchmarks.threads`).
        ray_address: A Ray cluster address (``None``: a local Ray instance).

    Raises:
        UnknownNameError: For an unknown executor.
    """
    if name == "serial":
        yield from (run_job(config, job) for job in jobs)
    elif name == "process":
        yield from _process(config, jobs, workers)
    elif name == "ray":
        yield from _ray(config, jobs, workers, ray_address)
    elif name == "thread":
        from benchmarks.threads import execute_threads

        yield from execute_threads(config, jobs, workers)
    else:
        raise UnknownNameError("executor", name, EXECUTORS)


#: Modules imported once by the fork server, so that workers start without re-importing.
_PRELOAD = ["benchmarks.jobs", "policies", "video_env.backends.text"]


#: Times a broken process pool is replaced (its unfinished jobs rerun in a new pool)
#: before the jobs still unfinished are recorded as errors.
MAX_POOL_RESTARTS = 2


def _process(config: dict[str, Any], jobs: Sequence[Job], workers: int) -> Iterator[dict[str, Any]]:
    """Run ``jobs`` on a local process pool, surviving workers that die.

    A worker killed mid-run (the OOM killer, a segfault in a decoder, SIGKILL) breaks the
    whole pool: every unfinished job's future fails. Their records were never returned,
    so the jobs are rerun, one per task, in a new pool (at most :data:`MAX_POOL_RESTARTS`
    times; jobs that keep killing their worker then get an error record each). A
    :class:`BenchWarning` says what happened. Workers end with this process, even when
    it is killed (:func:`end_with_bench`).
    """
    # "forkserver": workers fork from a clean server process (safe with the threads torch
    # and tokenizers start in this one) that has already imported the heavy modules.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    pending = list(jobs)
    size = max(1, min(8, len(jobs) // (max(1, workers) * 8)))
    reason = ""
    for restart in range(MAX_POOL_RESTARTS + 1):
        chunks = [pending[i : i + size] for i in range(0, len(pending), size)]
        lost: list[Job] = []
        with ProcessPoolExecutor(
            max_workers=max(1, workers),
            mp_context=context,
            initializer=end_with_bench,
            initargs=(os.getpid(),),
        ) as pool:
            futures = {pool.submit(run_jobs, config, chunk): chunk for chunk in chunks}
            for future in as_completed(futures):
                try:
                    records = future.result()
                except BrokenProcessPool as exc:
                    lost += futures[future]
                    reason = str(exc) or type(exc).__name__
                    continue
                yield from records
        if not lost:
            return
        order = {job.key: i for i, job in enumerate(jobs)}
        pending, size = sorted(lost, key=lambda job: order[job.key]), 1
        then = "rerun in a new pool" if restart < MAX_POOL_RESTARTS else "recorded as errors"
        warnings.warn(
            f"a benchmark worker process died ({reason}); its pool's {len(pending)} "
            f"unfinished jobs are {then}",
            BenchWarning,
            stacklevel=2,
        )
    for job in pending:
        yield lost_job_record(job, f"the worker process died: {reason}")


def end_with_bench(bench_pid: int) -> None:
    """Pool worker initializer: end this worker when the benchmark process ends.

    A benchmark killed with SIGKILL cannot stop its pool: its workers would wait for
    jobs forever, and keep alive the fork server (they hold its "alive" pipe) and the
    resource tracker. A daemon thread waits for ``bench_pid`` to end (a pidfd on Linux;
    elsewhere it looks once a second) and ends the worker; the fork server and the
    tracker see their pipes close and end too.
    """
    watcher = threading.Thread(target=_exit_after, args=(bench_pid,), daemon=True)
    watcher.start()


def _exit_after(pid: int) -> None:
    try:
        handle = os.pidfd_open(pid)  # readable once the process has ended (zombie or not)
    except (AttributeError, OSError):  # not Linux 5.3+, or the process is gone already
        while _running(pid):
            time.sleep(1.0)
    else:
        select.select([handle], [], [])
    os._exit(1)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a pid reused by another user's process
        return True
    return True


def _ray(
    config: dict[str, Any], jobs: Sequence[Job], workers: int, address: str | None
) -> Iterator[dict[str, Any]]:
    ray = require("ray", "ray", "the Ray executor")
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            try:
                ray.init(address=address, log_to_driver=False)
            except ConnectionError as exc:  # Ray's message names its own flags, not ours
                raise ConfigError(
                    f"no Ray cluster at --ray-address {address} ({str(exc).split('.')[0]}); "
                    "start one with `ray start --head`, pass its HOST:PORT to video-env's "
                    "--ray-address, or leave --ray-address out for a local Ray"
                ) from None
        else:
            ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False)
    try:
        task = ray.remote(num_cpus=1)(run_job)
        config_ref = ray.put(config)
        refs = {task.remote(config_ref, job): job for job in jobs}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            job = refs[done[0]]
            try:
                record = ray.get(done[0])
            except ray.exceptions.RayError as exc:  # a worker died (after Ray's retries)
                reason = next(iter(str(exc).strip().splitlines()), "")
                warnings.warn(
                    f"a Ray worker died ({type(exc).__name__}); job {job.key} is recorded as "
                    "an error and rerun on resume",
                    BenchWarning,
                    stacklevel=2,
                )
                record = lost_job_record(
                    job, f"the Ray worker died: {type(exc).__name__}: {reason}"[:500]
                )
            yield record
    finally:
        if started_here:
            ray.shutdown()
