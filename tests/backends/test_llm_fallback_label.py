"""Every LLM reply rejected: the row is the policy's offline fallback, whatever ``llm_calls``."""

import copy
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai")
pytest.importorskip("tenacity")

from benchmarks import jobs
from benchmarks.summary import FALLBACK_SUFFIX, policy_label
from video_env.backends.llm.testing import FakeOpenAIServer, FakeReply, chat_reply
from video_env.cli import main


def with_content(content: Any) -> FakeReply:
    """A well-formed completion whose message content is ``content`` (any JSON value)."""
    body = copy.deepcopy(chat_reply("x").body)
    body["choices"][0]["message"]["content"] = content
    return FakeReply(body=body)


UNUSABLE = {
    "null content": with_content(None),
    "wrong type": with_content(12345),
    "no JSON": chat_reply("I would rather not say."),
    "wrong keys": chat_reply('{"thoughts": "none"}'),
    "a megabyte of prose": chat_reply("blah " * 200_000),
}
BENCH = ["bench", "--suite", "synth-tiny", "--envs", "zoom", "--policies", "falconeye",
         "--limit", "2", "--quiet", "--no-plots", "--executor", "serial",
         "--llm", "openai:fake", "--llm-retries", "0"]  # fmt: skip


@pytest.mark.parametrize("fault", sorted(UNUSABLE))
def test_rejected_replies_are_labelled_as_the_fallback(
    fault: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("VIDEO_ENV_LLM_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(jobs, "_WORKERS", {})  # a cached worker would hold the last server
    with FakeOpenAIServer([chat_reply("OK")], default=UNUSABLE[fault]) as server:
        monkeypatch.setenv("VIDEO_ENV_LLM_BASE_URL", server.base_url)
        assert main([*BENCH, "--out", str(tmp_path)]) == 0
        assert len(server.requests) > 1  # the calls were made and answered (HTTP 200)
    lines = (tmp_path / "summary.csv").read_text().splitlines()
    header, rows = lines[0].split(","), [line.split(",") for line in lines[1:]]
    assert [r[header.index("policy")] for r in rows] == ["falconeye" + FALLBACK_SUFFIX]
    assert float(rows[0][header.index("mean_llm_calls")]) > 0


def test_policy_label_counts_used_replies_not_calls() -> None:
    record = {"policy": "falconeye", "llm_calls": 4, "llm_reply_failures": 2}
    assert policy_label({**record, "llm_replies_used": 0}) == "falconeye" + FALLBACK_SUFFIX
    assert policy_label({**record, "llm_replies_used": 1}) == "falconeye"
    assert policy_label({**record, "llm_reply_failures": 0, "llm_replies_used": 0}) == ("falconeye")
