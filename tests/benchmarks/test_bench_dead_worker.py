"""A process-pool worker killed mid-run: the run finishes, no record is lost or doubled."""

import os
import signal
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest

from benchmarks import executors
from benchmarks.config import BenchConfig
from benchmarks.jobs import Job, load_samples, plan, resolve_policies
from benchmarks.records import BenchWarning

CONFIG = BenchConfig(suite="synth-tiny", envs=("pacing", "zoom"), policies=("pacing-4x", "random"))


class RecordingPool(ProcessPoolExecutor):
    """A process pool that remembers its instances (to kill one of their workers)."""

    made: list["RecordingPool"] = []  # noqa: RUF012

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        RecordingPool.made.append(self)


def kill_a_worker(pool: ProcessPoolExecutor) -> None:
    pids = list(pool._processes)  # type: ignore[attr-defined]
    os.kill(pids[0], signal.SIGKILL)


@pytest.mark.slow
def test_a_killed_worker_costs_no_record(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executors, "ProcessPoolExecutor", RecordingPool)
    RecordingPool.made.clear()
    jobs = plan(CONFIG, load_samples(CONFIG), resolve_policies(CONFIG))

    def run() -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        for record in executors.execute("process", CONFIG.to_dict(), jobs, workers=2):
            if not records:
                kill_a_worker(RecordingPool.made[0])
            records.append(record)
        return records

    with pytest.warns(BenchWarning, match="worker process died.*rerun in a new pool"):
        records = run()
    assert len(RecordingPool.made) == 2  # the broken pool, then a new one
    assert sorted(r["job"] for r in records) == sorted(j.key for j in jobs)
    assert not any(r["error"] for r in records)


def test_jobs_that_keep_killing_workers_get_error_records(monkeypatch: pytest.MonkeyPatch) -> None:
    from concurrent.futures.process import BrokenProcessPool

    def broken_run_jobs(config: dict[str, Any], chunk: list[Job]) -> list[dict[str, Any]]:
        raise BrokenProcessPool("a child process terminated abruptly")

    class InlinePool:
        """Runs tasks at once in this process (no workers to kill)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def __enter__(self) -> "InlinePool":
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def submit(self, fn: Any, *args: Any) -> Any:
            from concurrent.futures import Future

            future: Future[Any] = Future()
            try:
                future.set_result(fn(*args))
            except BaseException as exc:
                future.set_exception(exc)
            return future

    monkeypatch.setattr(executors, "ProcessPoolExecutor", InlinePool)
    monkeypatch.setattr(executors, "run_jobs", broken_run_jobs)
    jobs = plan(CONFIG, load_samples(CONFIG), resolve_policies(CONFIG))[:5]
    with pytest.warns(BenchWarning) as caught:
        records = list(executors.execute("process", CONFIG.to_dict(), jobs, workers=2))
    messages = [str(w.message) for w in caught]
    assert sum("rerun in a new pool" in m for m in messages) == executors.MAX_POOL_RESTARTS
    assert "recorded as errors" in messages[-1]
    assert [r["job"] for r in records] == [j.key for j in jobs]
    assert all(r["error"].startswith("the worker process died") for r in records)
    assert all(r["correct"] is False and r["ended_by"] == "error" for r in records)
