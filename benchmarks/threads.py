"""The thread executor: N episodes in flight in one process, for server-bound runs.

With an OpenAI-compatible LLM or VLM (OpenAI, vLLM, SGLang), an episode spends most of
its time waiting for replies. ``--concurrency N`` keeps N episodes running in threads of
one process, so the server sees N requests at once and can batch them (as lmms-eval and
vLLM users expect); the client's retries with backoff and ``Retry-After`` handle rate
limits. Each thread owns a :class:`~benchmarks.jobs.Worker` (its envs, policies and LLM
client: policies and envs keep per-episode state and are not shared between threads);
loaded models and the disk cache are shared by all threads of the process. CPU-bound
parts (simulated perception, offline reasoners, local models) still take turns on the
GIL, so this executor helps only when episodes wait on I/O.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from benchmarks.config import BenchConfig
from benchmarks.jobs import Job, Worker
from video_env.errors import ConfigError


def execute_threads(
    config: dict[str, Any], jobs: Sequence[Job], concurrency: int
) -> Iterator[dict[str, Any]]:
    """Yield each job's record as it finishes, with at most ``concurrency`` in flight.

    Raises:
        ConfigError: If ``concurrency`` < 1.
    """
    if concurrency < 1:
        raise ConfigError(f"concurrency must be >= 1, got {concurrency}")
    cfg = BenchConfig.from_dict(config)
    local = threading.local()

    def run(job: Job) -> dict[str, Any]:
        worker: Worker | None = getattr(local, "worker", None)
        if worker is None:
            worker = local.worker = Worker(cfg)
        return worker.run(job)

    # Every job goes to the pool's queue at once: N threads take them as they free up,
    # whatever the consumer (logging with fsync) is doing, so N stay in flight.
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="episode") as pool:
        futures = [pool.submit(run, job) for job in jobs]
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:
            for future in futures:  # an interrupted run stops queued episodes
                future.cancel()
