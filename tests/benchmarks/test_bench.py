"""The benchmark runner: executors, resume after a kill, failures, reports."""

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import bench_records as records

import policies
from benchmarks.config import BenchConfig
from benchmarks.records import EpisodeLog, EpisodeLogWarning
from benchmarks.run import report, run_benchmark
from video_env import ConfigError
from video_env.cli import main
from video_env.envs import ENV_KINDS

POLICIES = ["random", "falconeye", "pacing-4x", "videoagent"]
ARGS = ["bench", "--suite", "synth-tiny", "--policies", *POLICIES, "--quiet", "--no-plots"]


@pytest.fixture(scope="module")
def serial_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("serial")
    assert main([*ARGS, "--out", str(out), "--executor", "serial"]) == 0
    return out


def test_serial_run_writes_every_file(serial_run: Path) -> None:
    recs = records(serial_run)
    # random on every env kind + 3 single-env policies, 12 samples
    assert len(recs) == 12 * (len(ENV_KINDS) + 3)
    assert len({r["job"] for r in recs}) == len(recs)
    for name in ("summary.csv", "summary.md", "categories.csv", "run.json"):
        assert (serial_run / name).stat().st_size > 0
    meta = json.loads((serial_run / "run.json").read_text())
    assert meta["perception"] == "simulated"
    assert meta["config"]["suite"] == "synth-tiny"
    assert "SIMULATED" in (serial_run / "summary.md").read_text()
    header = (serial_run / "summary.csv").read_text().splitlines()[0]
    assert header.startswith("env,policy,presets,rules,perception,episodes,failures,accuracy,")


def test_process_executor_gives_identical_records(serial_run: Path, tmp_path: Path) -> None:
    assert main([*ARGS, "--out", str(tmp_path), "--executor", "process", "--workers", "2"]) == 0
    assert records(tmp_path) == records(serial_run)


@pytest.mark.slow
def test_ray_executor_gives_identical_records(serial_run: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    assert main([*ARGS, "--out", str(tmp_path), "--executor", "ray", "--workers", "2"]) == 0
    assert records(tmp_path) == records(serial_run)


def test_resume_after_a_kill_loses_and_duplicates_nothing(serial_run: Path, tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "video_env.cli",
        *ARGS,
        "--out",
        str(tmp_path),
        "--executor",
        "serial",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = tmp_path / "episodes.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if log.exists() and log.read_bytes().count(b"\n") >= 20:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with log.open("ab") as f:  # as if the kill had cut a record in half
        f.write(b'{"job": "zoom|random|half-writ')
    with pytest.warns(EpisodeLogWarning, match="incomplete last record skipped"):
        partial = len(EpisodeLog(tmp_path).load())
    assert 20 <= partial < 72
    assert main([*ARGS, "--out", str(tmp_path), "--executor", "serial"]) == 0
    assert records(tmp_path) == records(serial_run)


def test_a_failing_policy_is_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    class Broken(policies.Policy):
        name = "broken"
        env_kinds = ("pacing",)

        def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
            raise RuntimeError("boom")

    policies.register(
        "broken", policies.PolicySpec(Broken, False, False, ("pacing",), "test"), overwrite=True
    )
    config = BenchConfig(suite="synth-tiny", envs=("pacing",), policies=("broken", "pacing-4x"))
    result = run_benchmark(config, tmp_path, executor="serial", plots=False)
    rows = {r["policy"]: r for r in result.rows}
    assert rows["broken"]["failures"] == 12
    assert math.isnan(rows["broken"]["accuracy"])  # nothing measured: n/a (issue 25)
    assert rows["pacing-4x"]["failures"] == 0
    broken = [r for r in result.records if r["policy"] == "broken"]
    assert all(r["error"] == "RuntimeError: boom" and "Traceback" in r["traceback"] for r in broken)


def test_a_run_reads_its_episode_log_once_to_resume_and_once_to_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[Path] = []
    load = EpisodeLog.load

    def counted(self: EpisodeLog, *args: Any, **kwargs: Any) -> Any:
        reads.append(self.path)
        return load(self, *args, **kwargs)

    monkeypatch.setattr(EpisodeLog, "load", counted)
    config = BenchConfig(suite="synth-tiny", envs=("pacing",), policies=("pacing-4x",))
    result = run_benchmark(config, tmp_path, executor="serial", plots=False)
    assert len(result.records) == 12 and (tmp_path / "summary.md").exists()
    assert len(reads) == 2, "a large run's log is parsed once per use, not once per table"


def test_report_regenerates_tables_and_plots(serial_run: Path, tmp_path: Path) -> None:
    for name in ("episodes.jsonl", "run.json"):
        (tmp_path / name).write_bytes((serial_run / name).read_bytes())
    result = report(tmp_path, plots=True)
    assert (tmp_path / "summary.md").read_text() == (serial_run / "summary.md").read_text()
    assert set(result.plots) == {
        "frontier.png",
        "categories.png",
        "timeline.png",
        "reliability.png",
    }
    assert all((tmp_path / p).read_bytes()[:4] == b"\x89PNG" for p in result.plots)


def test_compare_and_cli_errors(
    serial_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "compare", str(serial_run), str(serial_run)]) == 0
    assert "| 0 (0 to 0) | 0 | 0 | 0 | 0 |" in capsys.readouterr().out  # rounded zeros
    assert main(["bench", "report", str(tmp_path)]) == 2
    assert "holds no episode records" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="different set-up"):
        run_benchmark(
            BenchConfig(suite="synth-tiny", policies=("random",)), serial_run, plots=False
        )


def test_bench_on_a_benchmark_dataset_without_its_videos(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixture = Path(__file__).parents[1] / "fixtures" / "data" / "cg_bench" / "cgbench.json"
    args = ["bench", "--dataset", "cg-bench", "--annotations", str(fixture), "--videos",
            "/nonexistent", "--policies", "falconeye", "--out", str(tmp_path), "--quiet",
            "--no-plots", "--executor", "serial"]  # fmt: skip
    assert main(args) == 2  # a missing file stops the run unless stand-ins are asked for
    err = capsys.readouterr().err
    assert "--standin-missing-videos" in err
    assert "warning: cg-bench: " in err and "have no video" in err  # a line, no source line
    assert "data.load(" not in err
    assert main([*args, "--standin-missing-videos"]) == 0
    recs = EpisodeLog(tmp_path).load()
    assert recs
    assert all(r["simulated"] and r["standin"] and r["source"] == "cg-bench" for r in recs)
    assert all(r["error"] is None for r in recs)
    assert json.loads((tmp_path / "run.json").read_text())["config"]["dataset"] == "cg-bench"


def test_two_runs_cannot_write_one_folder(tmp_path: Path) -> None:
    import fcntl

    config = BenchConfig(suite="synth-tiny", envs=("pacing",), policies=("random",))
    with (tmp_path / ".lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(ConfigError, match="another run is writing"):
            run_benchmark(config, tmp_path, plots=False)
    assert run_benchmark(config, tmp_path, plots=False).new_episodes == 12
