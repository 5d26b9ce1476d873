"""Registry-wide checks, and every dataset loader's samples running in every env."""

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import video_env
from video_env import data
from video_env.actions import AnswerAction, EvaluateAction, QueryAction, SegmentQuery, SpeedAction
from video_env.envs import ClipQueryEnv, PacingEnv, ZoomEnv
from video_env.errors import VideoDecodeError
from video_env.provenance import VideoProvenanceWarning
from video_env.types import Interval

FIXTURES = Path(__file__).parents[1] / "fixtures" / "data"
LOADER_FIXTURES = {
    "falcon-bench": FIXTURES / "falcon_bench",
    "cg-bench": FIXTURES / "cg_bench" / "cgbench.json",
    "lvbench": FIXTURES / "lvbench",
    "mlvu": FIXTURES / "mlvu",
    "video-mme": FIXTURES / "video_mme" / "videomme.json",
    "egoschema": FIXTURES / "egoschema",
    "nextqa": FIXTURES / "nextqa",
    "nextgqa": FIXTURES / "nextgqa",
    "longvidsearch": FIXTURES / "longvidsearch",
}


@pytest.mark.parametrize("env_id", sorted(video_env.ENV_IDS))
def test_every_registered_env_passes_check_env_with_defaults(
    env_id: str, checker_warnings: Callable[..., list[str]]
) -> None:
    env = gym.make(env_id, render_mode="rgb_array").unwrapped
    assert checker_warnings(check_env, env, skip_render_check=False) == []


class _RewardlessEnv(gym.Env[np.ndarray, int]):
    """A control: its ``step`` returns no reward, which the checker warns about."""

    observation_space = gym.spaces.Box(0, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action: int) -> Any:
        return np.zeros(2, np.float32), None, True, False, {}


def test_the_warning_check_sees_the_checkers_warnings(
    checker_warnings: Callable[..., list[str]],
) -> None:
    caught = checker_warnings(check_env, _RewardlessEnv(), skip_render_check=True)
    assert any("reward returned by `step()`" in message for message in caught)


def test_every_loader_is_covered() -> None:
    assert set(LOADER_FIXTURES) == set(data.available()) - {"jsonl"}


def first_move(env: gym.Env) -> object:  # type: ignore[type-arg]
    if isinstance(env, PacingEnv):
        return SpeedAction(2)
    if isinstance(env, ZoomEnv):
        return EvaluateAction((Interval(0, min(20.0, env.video.duration)),))
    return QueryAction((SegmentQuery(1, "the answer"),))


@pytest.mark.parametrize("name", sorted(LOADER_FIXTURES))
@pytest.mark.parametrize("env_cls", [PacingEnv, ZoomEnv, ClipQueryEnv])
def test_loader_samples_run_an_episode_in_each_env(name: str, env_cls: type) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", data.MissingVideosWarning)
        samples = data.load(name, LOADER_FIXTURES[name], videos="/nonexistent", limit=2)
    assert samples
    with pytest.raises(VideoDecodeError, match="standin_missing_videos"):
        env_cls(list(samples)).reset(seed=0)  # a missing file is an error unless asked for
    env = env_cls(list(samples), standin_missing_videos=True)
    for index in range(len(samples)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", VideoProvenanceWarning)
            obs, info = env.reset(seed=0, options={"index": index})
        assert info["simulated"] and info["standin"]  # missing videos: a simulated stand-in
        _, _, terminated, truncated, info = env.step(first_move(env))
        assert not terminated
        assert info["last_action_error"] == ""
        _, _, terminated, _, info = env.step(AnswerAction("A"))
        assert terminated
        episode = info["episode"]
        assert episode["sample_id"] == samples[index].id
        if samples[index].gt_intervals:
            assert episode["gtou"] is not None
        if not samples[index].has_answer:
            assert episode["correct"] is None  # excluded from accuracy, not counted wrong
