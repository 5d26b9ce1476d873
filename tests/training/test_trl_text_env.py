"""TRL's environment hook over any env kind: its text actions as the one tool ``act``."""

from __future__ import annotations

import inspect

import gymnasium as gym
import pytest

from policies.training.trl_text_env import (
    TextToolEnv,
    text_env_factory,
    text_tool_dataset_rows,
)
from video_env.envs import ENV_CLASSES, ENV_IDS_BY_KIND
from video_env.errors import ConfigError
from video_env.synth.suites import load_suite
from video_env.wrappers.text_actions import default_action_set, parse_text_action

KINDS = sorted(ENV_CLASSES)


def test_the_only_tool_trl_sees_is_act() -> None:
    """TRL makes every public function of the class a tool, ``reset`` and ``get_reward`` aside."""
    methods = {name for name, _ in inspect.getmembers(TextToolEnv, predicate=inspect.isfunction)}
    tools = {m for m in methods if m not in ("reset", "get_reward") and not m.startswith("_")}
    assert tools == {"act"}


def test_acts_schema_is_one_text_argument() -> None:
    transformers = pytest.importorskip("transformers")
    schema = transformers.utils.get_json_schema(TextToolEnv.act)
    parameters = schema["function"]["parameters"]
    assert parameters["required"] == ["action"]
    assert parameters["properties"]["action"]["type"] == "string"


@pytest.mark.parametrize(
    ("kind", "replies"),
    [
        ("zoom", ["evaluate([0, 60])", "no action here", "answer(B)"]),
        ("clip_query", ['query(1, "a red ball")', "answer(A)"]),
    ],
)
def test_the_tool_steps_the_env_with_its_text_actions(kind: str, replies: list[str]) -> None:
    samples = load_suite("synth-tiny", limit=2)
    env = text_env_factory(kind, samples)()
    rows = text_tool_dataset_rows(kind, samples)
    assert [r["sample_id"] for r in rows] == [s.id for s in samples]
    assert "act" in rows[0]["prompt"][0]["content"]
    first = env.reset(**rows[1])
    assert first[0]["type"] == "text" and samples[1].question in first[0]["text"]
    results = [env.act(reply) for reply in replies]
    assert isinstance(results[-1], str) and "episode is over" in results[-1]
    if kind == "zoom":
        assert "invalid" in str(results[1])  # the unreadable reply: the env's invalid action
    # the same replies in the env directly: the same reward
    direct = gym.make(ENV_IDS_BY_KIND[kind], dataset=samples, disable_env_checker=True)
    direct.reset(seed=0, options={"index": 1})
    for reply in replies:
        *_, info = direct.step(parse_text_action(default_action_set(direct), reply))
    assert env.get_reward() == pytest.approx(info["episode"]["reward"])
    with pytest.raises(ConfigError, match="episode is over"):
        env.act("answer(A)")
    assert env.resets == 1 and env.steps == len(replies)


def test_an_unanswered_episode_is_abandoned_for_its_reward() -> None:
    samples = load_suite("synth-tiny", limit=1)
    env = text_env_factory("zoom", samples)()
    env.reset(sample_id=samples[0].id)
    env.act("evaluate([0, 30])")
    assert env.get_reward() <= 0 and env.record is not None
    assert env.record["ended_by"] == "no_answer"


def test_frames_come_back_as_images() -> None:
    pytest.importorskip("PIL")
    samples = load_suite("synth-tiny", limit=1)
    env = text_env_factory("pacing", samples, {"pixel_observations": True})()
    parts = env.reset(sample_id=samples[0].id)
    images = [p for p in parts if p["type"] == "image"]
    assert parts[0]["type"] == "text" and len(images) > 0
    assert images[0]["image"].size == tuple(env.env.turn_spec.size)  # type: ignore[union-attr]


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_resets_to_its_question(kind: str) -> None:
    samples = load_suite("synth-tiny", limit=1)
    env = text_env_factory(kind, samples)()
    (row,) = text_tool_dataset_rows(kind, samples)
    parts = env.reset(**row)
    assert samples[0].question in parts[0]["text"]


def test_bad_kinds_and_rows_are_refused() -> None:
    samples = load_suite("synth-tiny", limit=1)
    with pytest.raises(ConfigError, match="unknown env kind"):
        text_env_factory("nope", samples)
    with pytest.raises(ConfigError, match="unique"):
        text_env_factory("zoom", [samples[0], samples[0]])
    with pytest.raises(ConfigError, match="unknown sample_id"):
        text_env_factory("zoom", samples)().reset(sample_id="missing")


def test_a_call_trl_hands_over_decoded_is_written_back_as_json() -> None:
    """TRL decodes an argument the model wrote as a JSON object; a JSON preset reads it."""
    samples = load_suite("synth-tiny", limit=1)
    env = text_env_factory("tools", samples, env_kwargs={"preset": "dvd"})()
    env.reset(**text_tool_dataset_rows("tools", samples)[0])
    result = env.act({"name": "finish", "arguments": {"answer": "A"}})  # type: ignore[arg-type]
    assert isinstance(result, str) and "episode is over (answer)" in result
