"""Spaces print in a line or two (not the Text charset) and still behave as Gymnasium's."""

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import video_env  # noqa: F401  (registers the ids)
from video_env.envs.clip_query_spaces import UniformMultiDiscrete
from video_env.envs.registration import ENV_IDS
from video_env.envs.spaces import TEXT_CHARSET, CompactTuple, text_space
from video_env.wrappers import TextActions

#: Bounds on a printed space: Gymnasium's one-line Dict format, leaves of a few words.
MAX_LINES, MAX_CHARS = 2, 1000


def env_spaces(env_id: str) -> tuple[dict[str, spaces.Space], dict]:
    """The env's action and observation spaces, and its first observation."""
    env = gym.make(env_id, dataset="synth-tiny")
    obs, _ = env.reset(seed=0)
    return {"action": env.action_space, "observation": env.observation_space}, obs


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the -v0 ids are out of date
@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_every_space_prints_in_a_few_lines(env_id: str) -> None:
    for name, space in env_spaces(env_id)[0].items():
        text = repr(space)
        assert str(space) == text
        assert len(text.splitlines()) <= MAX_LINES, (name, text)
        assert len(text) <= MAX_CHARS, (name, len(text))
        assert f"charset=<text: {len(TEXT_CHARSET)} chars>" in text


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_spaces_still_pickle_copy_sample_and_contain(env_id: str) -> None:
    found, obs = env_spaces(env_id)
    for space in found.values():
        for clone in (pickle.loads(pickle.dumps(space)), copy.deepcopy(space)):
            assert type(clone) is type(space) and clone == space
            assert repr(clone) == repr(space)
            assert clone.contains(obs) == (space is found["observation"])
    found["action"].seed(0)
    assert found["action"].contains(found["action"].sample())
    # (Observation spaces do not sample: Box(0, int64 max) ``turn`` overflows Box.sample.)


def test_text_names_its_charset_briefly() -> None:
    space = text_space(256)
    assert repr(space) == f"Text(0, 256, charset=<text: {len(TEXT_CHARSET)} chars>)"
    assert space == spaces.Text(256, min_length=0, charset=TEXT_CHARSET)
    assert space.contains("Qu’est-ce que c’est ?\n— « rien »")
    assert not space.contains("x" * 257)


def test_text_actions_print_briefly() -> None:
    env = TextActions(gym.make("VideoEnv/ClipQuery-v1", dataset="synth-tiny"))
    assert len(repr(env.action_space)) < 60


def test_equal_parts_print_once_and_others_as_gymnasium_does() -> None:
    texts = CompactTuple([text_space(4)] * 3)
    assert repr(texts) == f"Tuple(3 x {text_space(4)!r})"
    mixed = CompactTuple([text_space(4), spaces.Discrete(2)])
    assert repr(mixed) == repr(spaces.Tuple(mixed.spaces))
    segments = UniformMultiDiscrete([64] * 27, start=[1] * 27)
    assert repr(segments) == "MultiDiscrete(27 x 64, start=1)"
    assert segments == spaces.MultiDiscrete([64] * 27, start=[1] * 27)
    uneven = UniformMultiDiscrete([3, 4])
    assert repr(uneven) == repr(spaces.MultiDiscrete(np.array([3, 4])))


@pytest.mark.parametrize("env_id", sorted(i for i in ENV_IDS if not i.endswith("-v0")))
def test_a_vector_envs_spaces_print_as_briefly_and_still_hold_its_batches(env_id: str) -> None:
    envs = gym.make_vec(env_id, num_envs=3, vectorization_mode="sync", dataset="synth-tiny")
    try:
        for space in (envs.action_space, envs.observation_space):
            text = repr(space)
            assert len(text.splitlines()) <= MAX_LINES and len(text) <= MAX_CHARS, len(text)
            assert "Tuple(3 x " in text and f"charset=<text: {len(TEXT_CHARSET)} chars>" in text
        observations, _ = envs.reset(seed=0)
        assert envs.observation_space.contains(observations)
        envs.action_space.seed(0)
        assert envs.action_space.contains(envs.action_space.sample())
    finally:
        envs.close()
