"""Executors: run jobs serially, on a local process pool, or as Ray tasks."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from benchmarks.config import EXECUTORS
from benchmarks.jobs import Job, run_job, run_jobs
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


def _process(config: dict[str, Any], jobs: Sequence[Job], workers: int) -> Iterator[dict[str, Any]]:
    # "forkserver": workers fork from a clean server process (safe with the threads torch
    # and tokenizers start in this one) that has already imported the heavy modules.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    size = max(1, min(8, len(jobs) // (max(1, workers) * 8)))
    chunks = [list(jobs[i : i + size]) for i in range(0, len(jobs), size)]
    with ProcessPoolExecutor(max_workers=max(1, workers), mp_context=context) as pool:
        futures = [pool.submit(run_jobs, config, chunk) for chunk in chunks]
        for future in as_completed(futures):
            yield from future.result()


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
        pending = [task.remote(config_ref, job) for job in jobs]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        if started_here:
            ray.shutdown()
