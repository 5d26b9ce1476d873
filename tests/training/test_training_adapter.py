"""The Pacing env as a chat environment for RL engines: same episodes as the policy loop."""

from typing import Any

import numpy as np
import pytest

from policies.episode_settings import EpisodeSettings
from policies.training.adapter import PacingChatEnv, engine_messages
from policies.training.cli import RULES
from policies.training.episodes import run_recorded_episode
from policies.training.teachers import GroundTruthScriptedTeacher
from video_env.backends.base import FrameBatch
from video_env.errors import ConfigError
from video_env.synth.suites import load_suite

SMOKE = RULES["cpu-smoke"]()


def engine_loop(env: PacingChatEnv, chat: Any) -> tuple[list[str], list[float]]:
    """What an engine's multi-turn loop does: prompt -> its own generation -> step."""
    messages = env.reset()
    replies, rewards = [], []
    while messages is not None:
        reply = chat.chat(messages, max_new_tokens=8, temperature=0.0)
        replies.append(reply.text)
        result = env.step(reply)
        rewards.append(result.reward)
        messages = result.messages
    return replies, rewards


def test_engine_loop_matches_the_policy_loop_with_the_scripted_teacher() -> None:
    (sample,) = load_suite("synth-tiny", limit=1)
    teacher = GroundTruthScriptedTeacher()
    teacher.begin_question(sample, 0)
    env = PacingChatEnv(sample, EpisodeSettings(rules=SMOKE), seed=3)
    replies, rewards = engine_loop(env, teacher)
    teacher.begin_question(sample, 0)
    run = run_recorded_episode(teacher, sample, EpisodeSettings(rules=SMOKE, max_turns=64), seed=3)
    assert replies == [t.reply for t in run.turns]
    assert env.record is not None and env.reward == run.reward > 1.0
    assert rewards[-1] == pytest.approx(run.reward)
    assert {k: env.record[k] for k in ("answer", "correct", "turns", "reward_parts")} == {
        k: run.record[k] for k in ("answer", "correct", "turns", "reward_parts")
    }
    with pytest.raises(ConfigError, match="over"):
        env.step("speed(1x)")


def test_turn_cap_and_invalid_replies() -> None:
    (sample,) = load_suite("synth-tiny", limit=1)
    env = PacingChatEnv(sample, EpisodeSettings(rules=SMOKE, max_turns=2))
    env.reset()
    first = env.step("<think>x</think><memory>m</memory><action>speed(1x)</action>")
    assert not first.done and first.messages is not None and first.reward == 0.0
    second = env.step("gibberish")
    assert second.done and second.reward == pytest.approx(-0.1)
    assert env.record is not None and env.record["ended_by"] == "max_steps" and env.reward == 0


def test_engine_messages_keep_the_frames_as_shown() -> None:
    (sample,) = load_suite("synth-tiny", limit=1)
    env = PacingChatEnv(sample, EpisodeSettings(rules=SMOKE))
    chat = env.reset()
    messages, frames, times = engine_messages(chat)
    batch = chat[1]["content"][1]
    assert isinstance(batch, FrameBatch)
    assert [p["type"] for p in messages[1]["content"]] == ["text", "video", "text"]
    assert np.array_equal(frames[0], batch.pixels()) and times[0] == list(batch.times)
    assert messages[0] == {"role": "system", "content": chat[0]["content"]}


@pytest.mark.slow
def test_engine_loop_with_a_tiny_qwen_matches_the_policy_loop(tiny_qwen_dir: str) -> None:
    transformers = pytest.importorskip("transformers")
    from policies.training.rollout import PolicyChat

    processor = transformers.AutoProcessor.from_pretrained(tiny_qwen_dir)
    model = transformers.AutoModelForImageTextToText.from_pretrained(tiny_qwen_dir)
    chat = PolicyChat(model, processor)
    (sample,) = load_suite("synth-tiny", limit=1)
    env = PacingChatEnv(sample, EpisodeSettings(rules=SMOKE, max_turns=3), seed=1)
    replies, _ = engine_loop(env, chat)
    run = run_recorded_episode(
        chat, sample, EpisodeSettings(rules=SMOKE, max_turns=3, max_new_tokens=8), seed=1
    )
    assert replies == [t.reply for t in run.turns]
    assert env.record is not None and env.record["ended_by"] == run.record["ended_by"]
