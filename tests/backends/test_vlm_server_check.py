"""A VLM (or LLM) server that is down or refuses: the run fails at once, naming it."""

import math
import socket
import time
from pathlib import Path

import pytest

pytest.importorskip("openai")
pytest.importorskip("tenacity")

from benchmarks import jobs
from benchmarks.summary import summarize, to_csv
from video_env.backends.base import FrameBatch
from video_env.backends.llm import LLMCallError
from video_env.backends.llm.testing import FakeOpenAIServer, error_reply
from video_env.backends.openai_vlm import OpenAIVLM
from video_env.cli import main
from video_env.synth import load_suite
from video_env.types import Interval

BENCH = ["bench", "--suite", "synth-tiny", "--envs", "zoom", "--policies", "falconeye",
         "--limit", "2", "--quiet", "--no-plots", "--executor", "serial"]  # fmt: skip


def refused_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (a port just freed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("VIDEO_ENV_LLM_BASE_URL", "VIDEO_ENV_LLM_API_KEY", "OPENAI_BASE_URL",
                 "OPENAI_API_KEY", "VIDEO_ENV_VLM_BASE_URL"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(jobs, "_WORKERS", {})


def test_a_down_vlm_server_fails_the_run_at_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = refused_url()
    monkeypatch.setenv("VIDEO_ENV_VLM_BASE_URL", url)
    started = time.monotonic()
    assert main([*BENCH, "--vlm", "openai:fake-vl", "--out", str(tmp_path)]) == 2
    assert time.monotonic() - started < 10  # was 108 s of retries per episode
    err = capsys.readouterr().err
    assert "VLM call to openai:fake-vl" in err and url.removesuffix("/v1") in err
    assert "VIDEO_ENV_VLM_BASE_URL" in err and "LLM call" not in err
    assert not (tmp_path / "episodes.jsonl").exists()


@pytest.mark.parametrize("status", [401, 404])
def test_a_vlm_server_refusing_the_settings_fails_the_run(
    status: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(default=error_reply(status, "no such model")) as refusing:
        monkeypatch.setenv("VIDEO_ENV_VLM_BASE_URL", refusing.base_url)
        assert main([*BENCH, "--vlm", "openai:fake-vl", "--out", str(tmp_path)]) == 2
        assert len(refusing.requests) == 1
    assert f"HTTP {status}" in capsys.readouterr().err


def test_a_down_llm_server_fails_the_run_at_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VIDEO_ENV_LLM_BASE_URL", refused_url())
    started = time.monotonic()
    assert main([*BENCH, "--llm", "openai:fake", "--out", str(tmp_path)]) == 2
    assert time.monotonic() - started < 10
    assert "no LLM server answers" in capsys.readouterr().err


def test_vlm_failures_name_the_vlm() -> None:
    vlm = OpenAIVLM("fake-vl", base_url=refused_url(), max_retries=0)
    sample = load_suite("synth-tiny")[0]
    batch = FrameBatch.sample(sample.video, Interval(0, 10), 2, (56, 56))
    with pytest.raises(LLMCallError, match=r"^VLM call to openai:fake-vl failed"):
        vlm.answer(batch, sample.question, sample.options)


def test_a_row_without_a_successful_episode_is_not_measured() -> None:
    failed = [
        {
            "env": "zoom",
            "policy": "p",
            "correct": False,
            "gtou": 0.0,
            "return": 0.0,
            "error": "LLMCallError: VLM call failed",
            "video_id": str(i),
        }
        for i in range(3)
    ]
    ok = [{**r, "policy": "q", "error": None, "correct": True} for r in failed]
    rows = {row["policy"]: row for row in summarize(failed + ok)}
    assert math.isnan(rows["p"]["accuracy"]) and math.isnan(rows["p"]["mean_gtou"])
    assert rows["p"]["failures"] == 3 and rows["q"]["accuracy"] == 1.0
    line = to_csv([rows["p"]], ["policy", "episodes", "accuracy"]).splitlines()[1]
    assert line == "p,3,"
