"""The -v1 ids: options as a list of texts in every env, the video's duration in Pacing."""

import gymnasium as gym
import pytest

import video_env  # noqa: F401  (registers the ids)
from video_env.envs.registration import ENV_IDS

NAMES = ("Pacing", "Zoom", "ClipQuery")


@pytest.mark.parametrize("name", NAMES)
def test_v1_observations_list_the_options_and_the_duration(name: str) -> None:
    env = gym.make(f"VideoEnv/{name}-v1", dataset="synth-tiny")
    obs, _ = env.reset(seed=0, options={"index": 0})  # an MCQ of the tiny suite
    sample = env.unwrapped.samples[0]
    assert sample.options
    assert obs["option_list"] == tuple(sample.options)
    assert obs["options"].splitlines()[0] == f"A. {sample.options[0]}"
    assert float(obs["duration"][0]) == pytest.approx(sample.duration, abs=0.01)
    assert env.observation_space.contains(obs)
    open_obs, _ = env.reset(seed=0, options={"index": 1})  # an open question
    assert env.unwrapped.samples[1].options is None and open_obs["option_list"] == ()


@pytest.mark.parametrize("name", NAMES)
def test_v0_keeps_the_first_layout(name: str) -> None:
    env = gym.make(f"VideoEnv/{name}-v0", dataset="synth-tiny")
    obs, _ = env.reset(seed=0)
    assert "option_list" not in obs and "option_list" not in env.observation_space.spaces
    assert ("duration" in obs) == (name != "Pacing")


def test_every_name_has_both_versions() -> None:
    both = {f"VideoEnv/{n}-v{v}" for n in NAMES for v in (0, 1)}
    assert both | {"VideoEnv/Tools-v1"} == set(ENV_IDS)  # Tools was born at v1
