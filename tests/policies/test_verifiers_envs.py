"""verifiers environments per paradigm, rolled out by verifiers against a local fake server."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

from policies.episode_settings import EpisodeSettings

pytest.importorskip("verifiers")

import verifiers as vf
from openai import AsyncOpenAI
from verifiers.legacy.clients import OpenAIChatCompletionsClient

from policies.training.cli import RULES
from policies.verifiers_envs import build_environment
from policies.verifiers_envs.env import VideoMultiTurnEnv
from video_env.backends.llm.testing import FakeOpenAIServer, chat_reply, request_images
from video_env.errors import ConfigError
from video_env.synth.suites import load_suite
from video_env.wrappers.text_actions import default_action_set, parse_text_action

SMOKE = RULES["cpu-smoke"]()


def rollout(module: str, replies: list[str], **kwargs: Any) -> tuple[dict[str, Any], list[Any]]:
    """One rollout of ``module``'s environment; its output and the model's requests."""
    with FakeOpenAIServer([chat_reply(text) for text in replies]) as fake:
        env = vf.load_environment(module, **kwargs)
        assert isinstance(env, VideoMultiTurnEnv) and isinstance(env, vf.MultiTurnEnv)
        client = OpenAIChatCompletionsClient(AsyncOpenAI(base_url=fake.base_url, api_key="x"))
        out = env.evaluate_sync(client, model="fake", num_examples=1, rollouts_per_example=1)
        return out["outputs"][0], fake.requests


def in_process_reward(env_id: str, kwargs: dict[str, Any], replies: list[str]) -> float:
    """The same replies in the env directly: the reward of the episode they make."""
    env = gym.make(env_id, disable_env_checker=True, **kwargs).unwrapped
    env.reset(seed=0, options={"index": 0})
    for text in replies:
        _, _, terminated, truncated, info = env.step(
            parse_text_action(default_action_set(env), text)
        )
        if terminated or truncated:
            return float(info["episode"]["reward"])
    return 0.0


def test_pacing_rollout_gets_frames_and_the_envs_reward() -> None:
    samples = load_suite("synth-tiny", limit=1)
    sample, window = samples[0], samples[0].gt_intervals[0]
    replies = [
        "<think>nothing yet</think><memory>none</memory><action>speed(2x)</action>",
        "I am not following the format",
        f"<think>seen</think><memory>it</memory><action>answer({sample.answer}, "
        f"[{window.start}, {window.end}])</action>",
    ]
    out, requests = rollout("policies.verifiers_envs.pacing", replies, dataset=samples, rules=SMOKE)
    kwargs = {"dataset": samples, "rules": SMOKE, "pixel_observations": True, "sensors": ()}
    expected = in_process_reward("VideoEnv/Pacing-v0", kwargs, replies)
    assert out["reward"] == pytest.approx(expected) and expected > 1  # correct, on time
    assert out["metrics"]["correct"] == 1.0 and out["metrics"]["invalid_actions"] == 1.0
    assert out["stop_condition"] == "has_final_env_response"
    assert len(requests) == 3
    shown = [len(request_images(r)) for r in requests]
    assert shown[0] == SMOKE.speeds[1].frames and shown[1] == SMOKE.speeds[2].frames
    assert all(kind == "image/jpeg" for r in requests for kind, _ in request_images(r))
    # VideoScout's format: every turn a fresh chat (system prompt, then one user turn)
    assert all([m["role"] for m in r.body["messages"]] == ["system", "user"] for r in requests)
    assert "invalid" in str(requests[2].body["messages"][-1]["content"])


@pytest.mark.parametrize(
    ("module", "env_id", "replies"),
    [
        ("policies.verifiers_envs.zoom", "VideoEnv/Zoom-v0", ["evaluate([0, 10])", "answer(B)"]),
        (
            "policies.verifiers_envs.clip_query",
            "VideoEnv/ClipQuery-v0",
            ['query(1, "a red ball")', "answer(A)"],
        ),
    ],
)
def test_zoom_and_clip_query_rollouts(module: str, env_id: str, replies: list[str]) -> None:
    samples = load_suite("synth-tiny", limit=1)
    out, requests = rollout(module, replies, dataset=samples)
    assert out["reward"] == pytest.approx(in_process_reward(env_id, {"dataset": samples}, replies))
    assert out["metrics"]["num_turns"] == 2.0
    first = requests[0].body["messages"]
    assert first[0]["role"] == "system" and "answer(" in first[0]["content"]
    assert samples[0].question in first[1]["content"]
    assert len(requests[1].body["messages"]) == 4  # the chat grows: system, user, model, user


def test_unanswered_episode_ends_at_max_turns_with_reward_zero() -> None:
    samples = load_suite("synth-tiny", limit=1)
    replies = ["<think>a</think><memory>b</memory><action>speed(1x)</action>"] * 2
    out, requests = rollout(
        "policies.verifiers_envs.pacing", replies, dataset=samples, rules=SMOKE, max_turns=2
    )
    assert out["reward"] == 0.0 and out["stop_condition"] == "max_turns_reached"
    assert len(requests) == 2


def test_unknown_paradigm() -> None:
    with pytest.raises(ConfigError, match="unknown paradigm"):
        build_environment("nope")


def test_rollout_against_a_video_env_server() -> None:
    """``base_url``: the episode runs in a session of ``video-env serve``'s app."""
    pytest.importorskip("openenv")
    from policies.training.trl_remote import server_env_kwargs
    from video_env.serving.testing import LocalServer

    samples = load_suite("synth-tiny", limit=1)
    replies = ["<think>a</think><memory>b</memory><action>speed(2x)</action>", "answer(A)"]
    with LocalServer(
        "VideoEnv/Pacing-v0", server_env_kwargs(samples, EpisodeSettings(rules=SMOKE))
    ) as server:
        out, requests = rollout(
            "policies.verifiers_envs.pacing",
            replies,
            dataset=samples,
            rules=SMOKE,
            base_url=server.base_url,
        )
        assert server.sessions()["created"] == 1 and server.sessions()["active"] == 0
    kwargs = {"dataset": samples, "rules": SMOKE, "pixel_observations": True, "sensors": ()}
    assert out["reward"] == pytest.approx(in_process_reward("VideoEnv/Pacing-v0", kwargs, replies))
    assert len(request_images(requests[1])) == SMOKE.speeds[2].frames
