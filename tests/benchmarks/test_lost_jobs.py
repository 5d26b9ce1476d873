"""A worker killed mid-episode (process pool, Ray): recorded, the run goes on, resume reruns it."""

from __future__ import annotations

import types
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest

from benchmarks import executors
from benchmarks.config import BenchConfig
from benchmarks.jobs import Job, load_samples, plan, resolve_policies
from benchmarks.records import BenchWarning, EpisodeLog, dedupe
from benchmarks.run import run_benchmark

CONFIG = BenchConfig(suite="synth-tiny", envs=("pacing",), policies=("pacing-4x",), limit=3)


class InlinePool:
    """Runs tasks at once in this process (a pool whose workers always die)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> InlinePool:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def submit(self, fn: Any, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args))
        except BaseException as exc:
            future.set_exception(exc)
        return future


def test_jobs_of_dead_workers_are_rerun_on_resume(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def dying(config: dict[str, Any], chunk: list[Job]) -> list[dict[str, Any]]:
        raise BrokenProcessPool("a child process terminated abruptly")

    with monkeypatch.context() as patch:
        patch.setattr(executors, "ProcessPoolExecutor", InlinePool)
        patch.setattr(executors, "run_jobs", dying)
        with pytest.warns(BenchWarning, match="recorded as errors"):
            first = run_benchmark(CONFIG, tmp_path, executor="process", workers=2, plots=False)
    assert first.rows[0]["failures"] == 3 and all(r["lost"] for r in first.records)
    resumed = run_benchmark(CONFIG, tmp_path, executor="serial", plots=False)
    assert resumed.new_episodes == 3 and resumed.skipped_episodes == 0
    assert not any(r.get("error") for r in resumed.records)
    assert resumed.rows[0]["failures"] == 0
    assert len(EpisodeLog(tmp_path).load()) == 6  # the log keeps both; dedupe prefers the rerun
    assert len(dedupe(EpisodeLog(tmp_path).load())) == 3


class CrashedError(Exception):
    pass


class Ref:
    """A hashable object reference (as Ray's are)."""

    def __init__(self, result: Any = None, crashed: bool = False) -> None:
        self.result, self.crashed = result, crashed


def fake_ray(crash_index: int) -> types.SimpleNamespace:
    """Enough of Ray's API to run tasks inline; task ``crash_index`` loses its worker."""
    calls: list[int] = []

    def remote(**_: Any) -> Any:
        def wrap(fn: Any) -> Any:
            def submit(config: Any, job: Job) -> Any:
                calls.append(len(calls))
                crash = len(calls) - 1 == crash_index
                return Ref(crashed=True) if crash else Ref(fn(config, job))

            return types.SimpleNamespace(remote=submit)

        return wrap

    def get(ref: Ref) -> Any:
        if ref.crashed:
            raise CrashedError("The worker died unexpectedly while executing this task.")
        return ref.result

    return types.SimpleNamespace(
        is_initialized=lambda: True,
        remote=remote,
        put=lambda value: value,
        wait=lambda pending, num_returns: (pending[:1], pending[1:]),
        get=get,
        exceptions=types.SimpleNamespace(RayError=CrashedError),
    )


def test_a_dead_ray_worker_is_recorded_and_the_run_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(executors, "require", lambda *a, **k: fake_ray(crash_index=1))
    jobs = plan(CONFIG, load_samples(CONFIG), resolve_policies(CONFIG))
    with pytest.warns(BenchWarning, match="Ray worker died"):
        records = list(executors.execute("ray", CONFIG.to_dict(), jobs, workers=1))
    assert len(records) == 3
    assert [bool(r.get("lost")) for r in records] == [False, True, False]
    assert records[1]["error"].startswith("the Ray worker died: CrashedError")
