"""A misbehaving LLM server: bounded, configurable calls; failures counted, never hidden."""

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("openai")
pytest.importorskip("tenacity")

from benchmarks.summary import FALLBACK_SUFFIX, policy_label
from video_env.backends.llm import LLMCallError, OpenAICompatibleLLM, make_llm
from video_env.backends.llm.factory import split_llm_spec, with_llm_options
from video_env.backends.llm.testing import FakeOpenAIServer, FakeReply, chat_reply, error_reply
from video_env.cli import main
from video_env.errors import ConfigError

MESSAGES = [{"role": "user", "content": "What colour is the umbrella?"}]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("VIDEO_ENV_LLM_MODEL", "VIDEO_ENV_LLM_BASE_URL", "VIDEO_ENV_LLM_API_KEY",
                 "OPENAI_BASE_URL", "OPENAI_API_KEY"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as s:
        yield s


def with_usage(usage: object) -> FakeReply:
    body = dict(chat_reply("a red one").body)
    body["usage"] = usage
    return FakeReply(body=body)


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": "lots", "completion_tokens": 3},
        {"prompt_tokens": 5, "completion_tokens": -1},
        {"prompt_tokens": 1.5, "completion_tokens": None},
        {"prompt_tokens": True, "completion_tokens": 2},
        "lots",
    ],
)
def test_malformed_usage_is_unknown_not_an_error(server: FakeOpenAIServer, usage: object) -> None:
    server.script(with_usage(usage))
    llm = OpenAICompatibleLLM("m", server.base_url, max_retries=0)
    done = llm.chat(MESSAGES)
    assert done.text == "a red one"
    assert done.usage_estimated
    assert done.prompt_tokens > 0 and done.completion_tokens > 0


def test_spec_options_set_timeout_and_retries(server: FakeOpenAIServer) -> None:
    llm = make_llm("openai:m?timeout_s=0.5&max_retries=1", base_url=server.base_url)
    assert isinstance(llm, OpenAICompatibleLLM)
    assert (llm.timeout_s, llm.max_retries) == (0.5, 1)
    assert llm.describe()["timeout_s"] == 0.5
    assert split_llm_spec("llama3.2:3b?max_retries=0") == ("llama3.2:3b", {"max_retries": 0})
    assert with_llm_options("openai:m", timeout_s=5.0, max_retries=None) == "openai:m?timeout_s=5"
    for bad in ("openai:m?timeout=5", "openai:m?max_retries=two", "local:/x?timeout_s=1"):
        with pytest.raises(ConfigError):
            make_llm(bad)


def test_a_never_answering_server_is_bounded_by_the_options() -> None:
    with FakeOpenAIServer(default=chat_reply("late", delay_s=3.0)) as slow:
        llm = make_llm("openai:m?timeout_s=0.3&max_retries=1", base_url=slow.base_url)
        assert llm is not None
        start = time.monotonic()
        with pytest.raises(LLMCallError, match="timed out"):
            llm.chat(MESSAGES)
        # 2 attempts x 0.3 s + backoff (1 s + jitter); the default would be 5 x 60 s
        assert time.monotonic() - start < 4.0


BENCH = ["bench", "--suite", "synth-tiny", "--envs", "zoom", "--policies", "falconeye",
         "--limit", "2", "--quiet", "--no-plots", "--executor", "serial"]  # fmt: skip


@pytest.mark.parametrize("status", [401, 403, 404])
def test_bench_fails_fast_on_settings_errors(
    status: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(default=error_reply(status, "bad key")) as refusing:
        monkeypatch.setenv("VIDEO_ENV_LLM_BASE_URL", refusing.base_url)
        assert main([*BENCH, "--llm", "openai:fake", "--out", str(tmp_path)]) == 2
        assert len(refusing.requests) == 1  # one check, no episode
    err = capsys.readouterr().err
    assert f"HTTP {status}" in err and "API key" in err
    assert not (tmp_path / "episodes.jsonl").exists()


def test_fallback_results_are_not_labelled_as_the_llm_policy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the check passes; every later call fails with a server error
    with FakeOpenAIServer([chat_reply("OK")], default=error_reply(500)) as failing:
        monkeypatch.setenv("VIDEO_ENV_LLM_BASE_URL", failing.base_url)
        args = [*BENCH, "--llm", "openai:fake", "--llm-timeout", "7", "--llm-retries", "0"]
        assert main([*args, "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "LLM replies could not be used" in captured.err
    summary = (tmp_path / "summary.csv").read_text().splitlines()
    header, rows = summary[0].split(","), [line.split(",") for line in summary[1:]]
    policy, failures = header.index("policy"), header.index("llm_reply_failures")
    assert [r[policy] for r in rows] == ["falconeye" + FALLBACK_SUFFIX]
    assert int(rows[0][failures]) >= 2
    # the client's settings are part of the run's record
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["llm_client"] == {"timeout_s": 7.0, "max_retries": 0}
    assert meta["config"]["llm"] == "openai:fake?timeout_s=7&max_retries=0"


def test_policy_label() -> None:
    assert policy_label({"policy": "falconeye", "llm_calls": 3, "llm_reply_failures": 1}) == (
        "falconeye"
    )
    assert policy_label({"policy": "falconeye", "llm_calls": 0, "llm_reply_failures": 2}) == (
        "falconeye (offline fallback)"
    )
    assert policy_label({"policy": "sequential"}) == "sequential"
