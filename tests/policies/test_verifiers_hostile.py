"""verifiers environments against a hostile or broken model and a lost env server.

A rollout's failures are the rollout's own: an over-long reply is the env's invalid
action, a lost ``video-env serve`` session is a recorded error of that rollout (never a
crash of the whole evaluation), and a record says how its episode really ended.
"""

from __future__ import annotations

import asyncio
import json
import math
import socket
from typing import Any

import pytest

pytest.importorskip("verifiers")

import verifiers as vf
from openai import AsyncOpenAI
from verifiers.legacy.clients import OpenAIChatCompletionsClient

from policies.episode_settings import EpisodeSettings
from policies.training.cli import RULES
from video_env.backends.llm.testing import FakeOpenAIServer, FakeReply, chat_reply, error_reply
from video_env.synth.suites import load_suite

SMOKE = RULES["cpu-smoke"]()
PACING = "policies.verifiers_envs.pacing"
SPEED = "<think>a</think><memory>b</memory><action>speed(2x)</action>"


def evaluate(
    module: str, replies: list[FakeReply], client_hook: Any = None, **kwargs: Any
) -> dict[str, Any]:
    """One rollout of ``module``'s environment; its output with the episode's record.

    Args:
        module: The environment's module.
        replies: The model's scripted replies.
        client_hook: Called after each model reply (with the number of replies so far).
        **kwargs: ``load_environment`` arguments.
    """
    with FakeOpenAIServer(replies) as fake:
        env = vf.load_environment(module, **kwargs)
        client = _HookedClient(
            AsyncOpenAI(base_url=fake.base_url, api_key="x", max_retries=0), client_hook
        )
        out = env.evaluate_sync(
            client, model="fake", num_examples=1, state_columns=["video_env_record"]
        )
    output: dict[str, Any] = out["outputs"][0]
    assert isinstance(output["reward"], float) and math.isfinite(output["reward"])
    return output


class _HookedClient(OpenAIChatCompletionsClient):  # type: ignore[misc]
    """A verifiers client that calls ``hook(n)`` after the ``n``-th model reply."""

    def __init__(self, client: AsyncOpenAI, hook: Any) -> None:
        super().__init__(client)
        self.hook = hook
        self.calls = 0

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        response = await super().get_response(*args, **kwargs)
        self.calls += 1
        if self.hook is not None:
            self.hook(self.calls)
        return response


def _server(samples: list[Any]) -> Any:
    pytest.importorskip("openenv")
    from policies.training.trl_remote import server_env_kwargs
    from video_env.serving.testing import LocalServer

    return LocalServer(
        "VideoEnv/Pacing-v0", server_env_kwargs(samples, EpisodeSettings(rules=SMOKE))
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("remote", [False, True])
def test_a_reply_longer_than_the_wire_limit_is_an_invalid_action(remote: bool) -> None:
    """A 1 MB reply: the env's invalid action, in process and on a server alike."""
    samples = load_suite("synth-tiny", limit=1)
    replies = [chat_reply(SPEED), chat_reply("a" * 1_000_000), chat_reply("answer(A)")]
    kwargs: dict[str, Any] = {"dataset": samples, "rules": SMOKE}
    if remote:
        with _server(samples) as server:
            out = evaluate(PACING, replies, base_url=server.base_url, **kwargs)
    else:
        out = evaluate(PACING, replies, **kwargs)
    assert out["error"] is None and out["stop_condition"] == "has_final_env_response"
    assert out["metrics"]["invalid_actions"] == 1.0
    assert out["video_env_record"]["ended_by"] == "answer"


def test_an_unreachable_env_server_is_a_recorded_error() -> None:
    samples = load_suite("synth-tiny", limit=1)
    out = evaluate(
        PACING, [], dataset=samples, rules=SMOKE, base_url=f"http://127.0.0.1:{_free_port()}"
    )
    assert out["stop_condition"] == "has_error" and out["error"]["error"] == "InfraError"
    assert out["reward"] == 0.0 and out["metrics"]["num_turns"] == 0.0


def test_an_env_server_lost_mid_episode_is_a_recorded_error() -> None:
    samples = load_suite("synth-tiny", limit=1)
    with _server(samples) as server:
        out = evaluate(
            PACING,
            [chat_reply(SPEED), chat_reply(SPEED)],
            client_hook=lambda n: server.close() if n == 1 else None,
            dataset=samples,
            rules=SMOKE,
            base_url=server.base_url,
        )
    assert out["stop_condition"] == "has_error" and out["error"]["error"] == "InfraError"
    assert "lost" in out["error"]["message"]
    assert out["reward"] == 0.0 and out["video_env_record"] is None


@pytest.mark.parametrize(
    ("replies", "max_turns", "stop", "ended_by"),
    [
        ([SPEED, SPEED], 2, "max_turns_reached", "max_turns"),
        ([SPEED, error_reply(500)], 4, "has_error", "error"),
        (
            [SPEED, error_reply(400, "context length exceeded")],
            4,
            "prompt_too_long",
            "prompt_too_long",
        ),
        ([SPEED, ""], 4, "has_error", "error"),  # an empty reply: verifiers' error
    ],
)
def test_an_unanswered_record_says_how_the_rollout_ended(
    replies: list[Any], max_turns: int, stop: str, ended_by: str
) -> None:
    samples = load_suite("synth-tiny", limit=1)
    script = [chat_reply(r) if isinstance(r, str) else r for r in replies]
    out = evaluate(PACING, script, dataset=samples, rules=SMOKE, max_turns=max_turns)
    assert out["stop_condition"] == stop and out["reward"] == 0.0
    assert out["video_env_record"]["ended_by"] == ended_by


@pytest.mark.parametrize("remote", [False, True])
def test_lone_surrogates_in_a_reply_are_read_as_replacement_characters(remote: bool) -> None:
    """A reply no UTF-8 wire or file can carry (a client other than OpenAI's may pass one)."""
    from policies.verifiers_envs.env import VideoMultiTurnEnv

    samples = load_suite("synth-tiny", limit=1)

    async def episode(env: VideoMultiTurnEnv) -> dict[str, Any]:
        state: dict[str, Any] = {"info": {"sample_index": 0}, "trajectory": []}
        await env.setup_state(state)
        reply = "<think>\ud800</think><memory>\udfff\x00</memory><action>answer(A\ud83d)</action>"
        await env.env_response([{"role": "assistant", "content": reply}], state)
        await env.finish_episode(state)
        record: dict[str, Any] = state["video_env_record"]
        return record

    kwargs: dict[str, Any] = {"dataset": samples, "rules": SMOKE}
    if remote:
        with _server(samples) as server:
            record = asyncio.run(
                episode(vf.load_environment(PACING, base_url=server.base_url, **kwargs))
            )
    else:
        record = asyncio.run(episode(vf.load_environment(PACING, **kwargs)))
    assert record["ended_by"] == "answer" and record["answer"] == "A\ufffd"
    json.dumps(record, ensure_ascii=False, default=str).encode("utf-8")  # writable as UTF-8


BAD_INDICES = [99, -1, 0.7, "zero", None, True]


@pytest.mark.parametrize("info", [{}, None, [], *({"sample_index": i} for i in BAD_INDICES)])
def test_a_row_naming_no_sample_is_that_rollouts_error_and_the_others_run(info: Any) -> None:
    samples = load_suite("synth-tiny", limit=1)
    env = vf.load_environment("policies.verifiers_envs.zoom", dataset=samples)
    good = {"prompt": [{"role": "user", "content": "q"}], "answer": "", "example_id": 0,
            "info": {"sample_index": 0}}  # fmt: skip
    bad = {**good, "example_id": 1, "info": info}
    with FakeOpenAIServer([chat_reply('answer("A")')] * 2) as fake:
        client = OpenAIChatCompletionsClient(
            AsyncOpenAI(base_url=fake.base_url, api_key="x", max_retries=0)
        )
        out = env.generate_sync([good, bad], client=client, model="fake")
    states = sorted(out["outputs"], key=lambda o: o["example_id"])
    assert states[0].get("error") is None
    assert states[1]["error"] is not None and "sample_index" in str(states[1]["error"])


def test_an_env_step_that_fails_is_that_rollouts_error_not_the_evaluations() -> None:
    """A bug in an env or a preset, or a server's error reply: one rollout's vf error."""
    samples = load_suite("synth-tiny", limit=1)
    env = vf.load_environment("policies.verifiers_envs.zoom", dataset=samples)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Server error: 'int' object has no attribute 'format'")

    async def episode() -> dict[str, Any]:
        state: dict[str, Any] = {"info": {"sample_index": 0}, "trajectory": []}
        await env.setup_state(state)
        state["video_env"].step = broken
        state["video_env"].abandon = broken
        with pytest.raises(vf.InfraError, match="env failed: RuntimeError"):
            await env.env_response([{"role": "assistant", "content": "answer(A)"}], state)
        await env.finish_episode(state)  # a failing abandon leaves no record, no crash
        return state

    state = asyncio.run(episode())
    assert state["video_env_record"] is None and state["video_env"] is None
