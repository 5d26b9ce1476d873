"""The chats an env kind is shown in (``policies.verifiers_envs.render``), over every kind.

The verifiers environment of every registered kind is rolled out too (``verifiers`` extra).
"""

from __future__ import annotations

from typing import Any

import pytest

from policies.verifiers_envs.render import TextChat, VideoScoutChat, env_chat
from video_env.envs import ENV_CLASSES, ClipQueryEnv, PacingEnv, ZoomEnv
from video_env.synth.suites import load_suite

KINDS = sorted(ENV_CLASSES)


def test_pacing_is_shown_in_videoscouts_fresh_chat() -> None:
    chat = env_chat(PacingEnv, {"max_invalid_actions": 5})
    assert isinstance(chat, VideoScoutChat) and chat.fresh_each_turn
    assert chat.env_kwargs["pixel_observations"] and chat.env_kwargs["max_invalid_actions"] == 5
    env = PacingEnv(load_suite("synth-tiny", limit=1), **chat.env_kwargs)
    observation, _ = env.reset(seed=0)
    messages = chat.first_messages(env, observation)
    assert [m["role"] for m in messages] == ["system", "user"]
    images = [p for p in messages[1]["content"] if p.get("type") == "image_url"]
    assert len(images) == int(observation["n_frames"])
    assert chat.next_messages(env, observation) == messages  # a fresh chat every turn
    env.close()


@pytest.mark.parametrize("env_class", [ZoomEnv, ClipQueryEnv])
def test_the_search_envs_are_shown_as_text_in_a_growing_chat(env_class: type) -> None:
    chat = env_chat(env_class)
    assert isinstance(chat, TextChat) and not chat.fresh_each_turn and not chat.shows_images
    env = env_class(load_suite("synth-tiny", limit=1))
    observation, _ = env.reset(seed=0)
    system, user = chat.first_messages(env, observation)
    assert system == {"role": "system", "content": env.system_prompt()}
    assert user == {"role": "user", "content": env.observation_text(observation)}
    assert chat.next_messages(env, observation) == [user]
    env.close()


def test_a_text_chat_shows_the_envs_images_beside_its_text() -> None:
    env = PacingEnv(load_suite("synth-tiny", limit=1), pixel_observations=True)
    observation, _ = env.reset(seed=0)
    (user,) = TextChat({}).next_messages(env, observation, lambda fs: [{"n": len(fs)}])
    text, frames = user["content"]
    assert text == {"type": "text", "text": env.observation_text(observation)}
    assert frames == {"n": int(observation["n_frames"])}
    env.close()


@pytest.mark.parametrize("kind", KINDS)
def test_every_kinds_first_chat_asks_its_question(kind: str) -> None:
    env_class = ENV_CLASSES[kind]
    chat = env_chat(env_class)
    env = env_class(load_suite("synth-tiny", limit=1), **chat.env_kwargs)
    observation, _ = env.reset(seed=0)
    messages = chat.first_messages(env, observation)
    assert messages[0]["role"] == "system"
    assert str(observation["question"]) in str(messages[-1]["content"])
    env.close()


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_is_a_verifiers_environment(kind: str) -> None:
    """One rollout per kind: an unreadable reply, then the turn cap (reward 0 or less)."""
    pytest.importorskip("verifiers")
    from openai import AsyncOpenAI
    from verifiers.legacy.clients import OpenAIChatCompletionsClient

    from policies.verifiers_envs import build_environment
    from video_env.backends.llm.testing import FakeOpenAIServer, chat_reply

    samples = load_suite("synth-tiny", limit=1)
    with FakeOpenAIServer([chat_reply("no action here")]) as fake:
        env: Any = build_environment(kind, dataset=samples, max_turns=1)
        client = OpenAIChatCompletionsClient(AsyncOpenAI(base_url=fake.base_url, api_key="x"))
        out = env.evaluate_sync(client, model="fake", num_examples=1, rollouts_per_example=1)
        requests = fake.requests
    rollout = out["outputs"][0]
    assert rollout["stop_condition"] == "max_turns_reached" and rollout["reward"] <= 0
    assert samples[0].question in str(requests[0].body["messages"])
