"""Vector envs as Gymnasium users make them: ``gym.make_vec`` with no extra arguments."""

import copy
import multiprocessing as mp
import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector.utils import (
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

import video_env  # noqa: F401  (registers the ids)
from video_env.envs.registration import ENV_IDS
from video_env.envs.spaces import text_space
from video_env.envs.vector_memory import SEQUENCE_ITEMS, ObservationDict

#: Every -v1 id, and a -v0 one without Sequence spaces (whose texts Gymnasium's own shared
#: memory read back as "000...").
IDS = ("VideoEnv/Pacing-v1", "VideoEnv/Zoom-v1", "VideoEnv/ClipQuery-v1", "VideoEnv/Tools-v1",
       "VideoEnv/Pacing-v0")  # fmt: skip


def assert_same(a: Any, b: Any) -> None:
    """``a`` and ``b`` are equal nested dicts, tuples, arrays and scalars."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys()
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    else:
        np.testing.assert_array_equal(a, b)


def rollout(env_id: str, mode: str, steps: int = 3, **vector_kwargs: Any) -> list[Any]:
    """Observations and rewards of 2 envs over ``steps`` seeded random steps."""
    envs = gym.make_vec(
        env_id, 2, vectorization_mode=mode, vector_kwargs=vector_kwargs, dataset="synth-tiny"
    )
    try:
        obs, _ = envs.reset(seed=0)
        trace = [copy.deepcopy(obs)]
        envs.action_space.seed(1)
        for _ in range(steps):
            obs, reward, *_ = envs.step(envs.action_space.sample())
            assert envs.observation_space.contains(dict(obs))
            trace += [copy.deepcopy(obs), reward]
        return trace
    finally:
        envs.close()


def test_the_ids_are_registered() -> None:
    assert set(IDS) <= set(ENV_IDS)


@pytest.mark.parametrize("env_id", IDS)
def test_async_make_vec_needs_no_arguments_and_matches_sync(env_id: str) -> None:
    sync, shared = rollout(env_id, "sync"), rollout(env_id, "async")
    assert type(shared[0]) is dict  # copy=True batches are plain dicts, as SyncVectorEnv's
    assert shared[0]["question"][0]  # real text, not the first read of shared memory
    assert_same(tuple(shared), tuple(sync))


def test_async_without_copy_returns_a_view_later_steps_update() -> None:
    envs = gym.make_vec(
        "VideoEnv/Zoom-v1", 2, "async", vector_kwargs={"copy": False}, dataset="synth-tiny"
    )
    try:
        view, _ = envs.reset(seed=0)
        budget = int(view["budget_left"][0][0])
        evaluate_one = {  # evaluate the first half of the video
            "kind": np.array([0, 0]),
            "windows": np.tile(np.float32([0.0, 0.5]), (2, 8, 1)),
            "n_windows": np.array([1, 1]),
            "answer": ("", ""),
            "has_window": np.array([0, 0]),
            "window": np.zeros((2, 2), np.float32),
        }
        envs.step(evaluate_one)
        assert int(view["budget_left"][0][0]) == budget - 1  # the same object, now updated
        assert view["evaluations"][0]  # a Sequence, read from shared memory
        assert type(pickle.loads(pickle.dumps(view))) is dict
    finally:
        envs.close()


def test_shared_memory_round_trip_and_overflow() -> None:
    space = ObservationDict(
        {"notes": spaces.Sequence(text_space(8), stack=False), "x": spaces.Box(0, 1, (2,))}
    )
    memory = create_shared_memory(space, n=2, ctx=mp)
    batch = read_from_shared_memory(space, memory, n=2)
    first = {"notes": ("a", "bé"), "x": np.array([0.5, 1.0], np.float32)}
    second = {"notes": (), "x": np.zeros(2, np.float32)}
    write_to_shared_memory(space, 0, first, memory)
    write_to_shared_memory(space, 1, second, memory)
    assert batch["notes"] == (("a", "bé"), ())
    np.testing.assert_array_equal(batch["x"], [[0.5, 1.0], [0.0, 0.0]])
    write_to_shared_memory(space, 1, first, memory)  # a later write is what is read
    assert batch["notes"] == (("a", "bé"), ("a", "bé"))
    notes = tuple(f"{i:08d}" for i in range(SEQUENCE_ITEMS * 100))  # over the slot's bound
    too_long = {"notes": notes, "x": np.zeros(2, np.float32)}
    with pytest.raises(ValueError, match="shared_memory': False"):
        write_to_shared_memory(space, 0, too_long, memory)
