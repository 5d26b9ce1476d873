"""VLM server faults through OpenAIVLM: bounded, recorded per episode, the run goes on."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("openai")
pytest.importorskip("tenacity")

from policies import make as make_policy
from policies.runner import run_episode
from video_env.backends.llm.testing import (
    FakeOpenAIServer,
    FakeReply,
    chat_reply,
    error_reply,
)
from video_env.backends.openai_vlm import OpenAIVLM
from video_env.envs.perception import Perception
from video_env.envs.zoom import ZoomEnv
from video_env.envs.zoom_rules import ZoomRules
from video_env.synth import load_suite

GOOD = chat_reply("B", logprobs=[-0.1], tokens=["B"])


def malformed_logprobs(value: Any = "very likely") -> FakeReply:
    body = copy.deepcopy(GOOD.body)
    body["choices"][0]["logprobs"]["content"][0]["logprob"] = value
    return FakeReply(body=body)


FAULTS: dict[str, tuple[FakeReply, str]] = {
    "not JSON": (
        FakeReply(body="<html>proxy error</html>", content_type="text/html"),
        "not a chat completion",
    ),
    "empty choices": (FakeReply(body={"object": "chat.completion", "choices": []}), "choices"),
    "no logprobs": (chat_reply("B"), "no logprobs"),
    "malformed logprobs": (malformed_logprobs(), "logprobs"),
    # a probability above 1 is no probability: not read as full confidence
    "positive logprob": (malformed_logprobs(0.7), "a positive log-probability (0.7)"),
    "429": (error_reply(429), "429"),
    "5xx": (error_reply(503), "503"),
    "slow": (chat_reply("B", delay_s=2.0), "timed out"),
}


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default=GOOD) as fake:
        yield fake


def setup(server: FakeOpenAIServer) -> tuple[Any, Any, int]:
    sample = next(s for s in load_suite("synth-tiny") if s.options)
    vlm = OpenAIVLM("qwen-vl", base_url=server.base_url, max_retries=1, backoff_s=(0.0, 0.01),
                    timeout_s=0.5)  # fmt: skip
    rules = ZoomRules(short_pixels=56 * 56, long_pixels=56 * 56, max_frames=2)
    env = ZoomEnv([sample], perception=Perception(vlm=vlm, captioner=vlm), rules=rules)
    return env, make_policy("uniform"), len(rules.clips(sample.video.duration))


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_vlm_fault_is_recorded_and_the_next_episode_runs(
    fault: str, server: FakeOpenAIServer
) -> None:
    env, policy, n_clips = setup(server)
    reply, reason = FAULTS[fault]
    server.script(*[chat_reply("a caption")] * n_clips, *[reply] * 2)  # both attempts fail
    started = time.monotonic()
    failed = run_episode(env, policy, seed=0)
    assert time.monotonic() - started < 10  # bounded: 2 attempts of 0.5 s at most
    assert failed["error"] and reason in failed["error"], failed["error"]
    assert failed["correct"] is False
    ok = run_episode(env, policy, seed=1)  # the server recovered
    assert ok["error"] is None and ok["vlm_calls"] >= 1


@pytest.mark.parametrize("count", [float("nan"), float("inf"), -3])
def test_token_counts_that_are_not_counts_are_estimated(
    count: Any, server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    env, policy, n_clips = setup(server)
    caption = chat_reply("a caption", prompt_tokens=count)  # sent as JSON's NaN, Infinity...
    answer = chat_reply("B", logprobs=[-0.1], tokens=["B"], prompt_tokens=count)
    server.script(*[caption] * n_clips, answer)
    with caplog.at_level("WARNING", logger="video_env.backends.openai_vlm"):
        record = run_episode(env, policy, seed=0)
    assert record["error"] is None, record["error"]  # the calls themselves were sound
    assert record["vlm_calls"] >= 1 and record["visual_tokens"] >= 0
    assert "not counts; estimated" in caplog.text


def test_a_logprob_rounded_above_zero_reads_as_zero() -> None:
    from video_env.backends.confidence import checked_logprob

    assert checked_logprob(3e-7) == 0.0 and checked_logprob(-0.5) == -0.5
    for bad in (0.7, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="log-probability"):
            checked_logprob(bad)


def test_a_ten_megabyte_reply_is_survived_and_bounded(server: FakeOpenAIServer) -> None:
    env, policy, n_clips = setup(server)
    huge = chat_reply("B" * 10_000_000, logprobs=[-0.1], tokens=["B"])
    server.script(*[chat_reply("a caption")] * n_clips, huge)
    record = run_episode(env, policy, seed=0)
    assert record["error"] is None
    assert len(str(record)) < 2**20
