"""Benchmarks with named backends, an LLM judge and the thread executor."""

import json
import os
from pathlib import Path

import pytest
from conftest import bench_records as records

from benchmarks.config import BenchConfig
from benchmarks.records import EpisodeLog
from video_env.cli import main
from video_env.envs import ENV_KINDS
from video_env.errors import ConfigError

ARGS = ["bench", "--suite", "synth-tiny", "--quiet", "--no-plots"]


def test_config_records_backends_in_its_fingerprint() -> None:
    base = BenchConfig()
    assert base.simulated_roles() == ["vlm", "captioner", "clip"]
    clip = BenchConfig(clip="open_clip:ViT-B-32:laion2b_s34b_b79k")
    assert clip.fingerprint() != base.fingerprint()
    assert clip.simulated_roles() == ["vlm", "captioner"]
    real = BenchConfig(vlm="openai:gpt-4o", clip="open_clip:ViT-B-32")
    assert real.perception_specs()["captioner"] == "openai:gpt-4o" and not real.simulated_roles()
    assert BenchConfig(judge="openai:gpt-4o-mini").fingerprint() != base.fingerprint()
    with pytest.raises(ConfigError):
        BenchConfig(clip="/no/such/folder")
    assert BenchConfig.from_dict(real.to_dict()) == real


def test_thread_executor_gives_identical_records(tmp_path: Path) -> None:
    args = [*ARGS, "--policies", "random", "uniform", "pacing-4x", "--limit", "4"]
    assert main([*args, "--out", str(tmp_path / "s"), "--executor", "serial"]) == 0
    assert main([*args, "--out", str(tmp_path / "t"), "--concurrency", "4"]) == 0
    assert records(tmp_path / "t") == records(tmp_path / "s")
    meta = json.loads((tmp_path / "t" / "run.json").read_text())
    assert meta["executor"] == "thread" and meta["workers"] == 4
    assert (
        main([*args, "--out", str(tmp_path / "x"), "--concurrency", "2", "--executor", "ray"]) == 2
    )


def test_workers_and_concurrency_below_one_fail_before_the_run_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for flag, value in (("--concurrency", "0"), ("--workers", "0"), ("--workers", "-3")):
        assert main([*ARGS, "--out", str(tmp_path), flag, value]) == 2
        out, err = capsys.readouterr()
        assert f"{flag} must be >= 1, got {value}" in err and "results ->" not in out
    assert main([*ARGS, "--out", str(tmp_path), "--concurrency", "4", "--workers", "2"]) == 2
    assert "drop --workers" in capsys.readouterr().err
    assert not tmp_path.joinpath("episodes.jsonl").exists()


def test_bench_with_open_clip_records_and_labels(
    tmp_path: Path, tiny_clip_dir: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    args = [*ARGS, "--envs", "clip_query", "--policies", "videoagent", "--limit", "2"]
    assert main([*args, "--clip", tiny_clip_dir, "--out", str(out), "--workers", "1"]) == 0
    assert (
        f"perception SIMULATED (vlm simulated, captioner simulated, clip {tiny_clip_dir}) |"
        in capsys.readouterr().out
    )
    meta = json.loads((out / "run.json").read_text())
    assert meta["backends"]["clip"] == tiny_clip_dir and meta["config"]["clip"] == tiny_clip_dir
    assert meta["simulated_backends"] == ["vlm", "captioner"]
    assert (
        meta["perception"]
        == f"simulated (vlm simulated, captioner simulated, clip {tiny_clip_dir})"
    )
    recs = records(out)
    assert len(recs) == 2 and all(r["simulated"] for r in recs)  # the captioner is simulated
    assert all(r.get("error") is None for r in recs)


def test_llm_judge_failures_are_recorded_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("openai")
    from video_env.backends.llm.testing import FakeOpenAIServer, error_reply

    # A 4xx fails at once (5xx retries with backoff: tested in test_llm_judge.py).
    with FakeOpenAIServer(default=error_reply(400)) as server:
        monkeypatch.setenv("VIDEO_ENV_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("VIDEO_ENV_LLM_API_KEY", "sk-test")
        args = [*ARGS, "--envs", "zoom", "--policies", "uniform", "--limit", "2", "--workers", "1"]
        assert main([*args, "--judge", "openai:judge", "--out", str(tmp_path)]) == 0
    recs = records(tmp_path)
    open_answers = [r for r in recs if r["job"].split("|")[2].endswith("/open")]
    assert open_answers and all("judge call failed" in r["judge_error"] for r in open_answers)
    assert all(r["correct"] is False for r in open_answers)  # counted "no", as released
    assert all("judge_error" not in r for r in recs if r not in open_answers)  # MCQs need none
    assert json.loads((tmp_path / "run.json").read_text())["backends"]["judge"] == "openai:judge"


@pytest.mark.slow
def test_real_tiny_models_run_every_env_unsimulated(tmp_path: Path, tiny_clip_dir: str) -> None:
    """After the merge with part A: every env on tiny real models, labelled not simulated."""
    pytest.importorskip("video_env.backends.transformers_vlm")
    testing = pytest.importorskip("video_env.backends.testing")
    qwen = str(testing.tiny_qwen2_5_vl(tmp_path / "qwen"))
    out = tmp_path / "run"
    args = [*ARGS, "--policies", "random", "--limit", "1", "--workers", "1"]
    assert (
        main(
            [*args, "--vlm", qwen, "--captioner", qwen, "--clip", tiny_clip_dir, "--out", str(out)]
        )
        == 0
    )
    meta = json.loads((out / "run.json").read_text())
    assert meta["perception"] == "real, random weights (plumbing test)"
    assert meta["simulated_backends"] == []
    recs = records(out)
    assert {r["job"].split("|")[0] for r in recs} == set(ENV_KINDS)
    assert not any(r["simulated"] for r in recs) and not any(r.get("error") for r in recs)
    summary = (out / "summary.md").read_text()
    assert "SIMULATED" not in summary and "perception real," in summary
    assert os.path.exists(out / "summary.csv")


def test_concurrent_episodes_ride_out_a_rate_limit_storm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("openai")
    from video_env.backends.llm.testing import FakeOpenAIServer, chat_reply, error_reply

    storm = [error_reply(429, "rate limited")] * 4  # the first requests of 4 episodes at once
    reply = chat_reply('{"answer": "A", "window": [0, 10]}')
    with FakeOpenAIServer(storm, default=reply) as server:
        monkeypatch.setenv("VIDEO_ENV_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("VIDEO_ENV_LLM_API_KEY", "sk-test")
        args = [*ARGS, "--envs", "zoom", "--policies", "blind-llm", "--limit", "4"]
        assert (
            main([*args, "--llm", "openai:fake", "--concurrency", "4", "--out", str(tmp_path)]) == 0
        )
        statuses = len(server.requests)
    recs = records(tmp_path)
    assert len(recs) == 4 and not any(r.get("error") for r in recs)  # retried, then answered
    assert statuses >= 8 and all(r["llm_calls"] >= 1 for r in recs)


def test_a_run_that_failed_on_a_bad_judge_does_not_block_the_corrected_rerun(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, empty = tmp_path / "run", tmp_path / "not-a-model"
    empty.mkdir()
    args = [*ARGS, "--envs", "zoom", "--policies", "uniform", "--limit", "1", "--out", str(out)]
    assert main([*args, "--judge", f"local:{empty}"]) == 2  # fails after writing run.json
    assert f"cannot load '{empty}'" in capsys.readouterr().err
    assert (out / "run.json").exists()
    assert main([*args, "--judge", "exact"]) == 0
    assert len(EpisodeLog(out).load()) == 1


def test_misplaced_dataset_flags_and_absent_local_paths_fail_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    annotations = "/work/nowhere/val.csv"
    for extra, message in (
        (["--annotations", annotations], "--annotations and --videos go with --dataset NAME"),
        (["--videos", str(tmp_path)], "--annotations and --videos go with --dataset NAME"),
        (["--llm", "local:/no/such/llm"], "--llm: LLM spec 'local:/no/such/llm': no such folder"),
        (["--judge", "local:./no/such/judge"], "--judge: LLM spec 'local:./no/such/judge'"),
    ):  # fmt: skip
        assert main([*ARGS, "--out", str(tmp_path / "run"), *extra]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
