"""The benchmark runner's throughput and overhead.

Run: ``python -m benchmarks.perf.runner [--suite synth-hour]``

1. Episodes per second of whole ``video-env bench`` commands (fresh processes, start-up
   included) with the serial and the process executor (all local cores) on the same
   jobs; on 2 cores CPU-bound simulated episodes should approach 2x.
2. The runner's own overhead per episode (planning, logging with fsync) against calling
   ``policies.run_episode`` in a plain loop on the same jobs, both warm in this process
   (target <= 5 %).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.config import BenchConfig
from benchmarks.jobs import Worker, load_samples, plan, resolve_policies
from benchmarks.run import run_benchmark

POLICIES = ("falconeye", "sequential", "pacing-1x", "videoagent")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="synth-hour")
    parser.add_argument("--repeats", type=int, default=3, help="serial timings to take the best of")
    args = parser.parse_args()
    config = BenchConfig(suite=args.suite, policies=POLICIES)
    jobs = plan(config, load_samples(config), resolve_policies(config))
    worker = Worker(config)
    for job in jobs[:: max(1, len(jobs) // 8)]:
        worker.run(job)  # warm caches and the text embedder: measure steady state

    plain = min(_time(lambda: [worker.run(j) for j in jobs]) for _ in range(args.repeats))
    serial = min(_time(lambda: _bench(config, "serial", 1)) for _ in range(args.repeats))
    n = len(jobs)
    cores = os.cpu_count() or 1
    cold = {
        ex: _time(lambda ex=ex: _command(args.suite, ex, cores)) for ex in ("serial", "process")
    }
    print(f"{n} episodes of {args.suite} ({', '.join(POLICIES)})")
    print(f"{'video-env bench --executor serial':<40} {n / cold['serial']:8.1f} episodes/s")
    label = f"video-env bench --executor process ({cores})"
    print(f"{label:<40} {n / cold['process']:8.1f} episodes/s")
    print(f"process / serial speed-up: {cold['serial'] / cold['process']:.2f}x on {cores} cores "
          "(whole commands, start-up included)")  # fmt: skip
    overhead = (serial - plain) / plain
    print(f"runner overhead per episode: {(serial - plain) / n * 1e3:.2f} ms = {overhead:+.1%} "
          f"of a plain run_episode loop (warm, target <= 5 %)")  # fmt: skip


def _command(suite: str, executor: str, workers: int) -> None:
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "video_env.cli", "bench", "--suite", suite, "--policies",
               *POLICIES, "--executor", executor, "--workers", str(workers), "--out", out,
               "--quiet", "--no-plots"]  # fmt: skip
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def _bench(config: BenchConfig, executor: str, workers: int) -> None:
    with tempfile.TemporaryDirectory() as out:
        run_benchmark(config, Path(out), executor=executor, workers=workers, plots=False)


def _time(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
