from collections.abc import Callable

import numpy as np
import pytest

from video_env.envs import PacingEnv
from video_env.wrappers import ACTIONS, FEATURES, PacingFeatures, TextActions


def test_text_actions_parse_and_report_errors() -> None:
    env = TextActions(PacingEnv("synth-tiny"))
    assert "speed(2x)" in env.instructions
    obs, info = env.reset(seed=0)
    obs, reward, *_, info = env.step(
        "<think>go</think><memory>nothing yet</memory><action>speed(2x)</action>"
    )
    assert info["last_action_error"] == ""
    assert obs["memory"] == "nothing yet"
    assert list(obs["chunks"]) == [2, 3]
    obs, reward, *_, info = env.step("I would like to fly(3)")
    assert "no action found" in info["last_action_error"]
    assert obs["last_action_error"] == info["last_action_error"]
    assert reward < 0
    assert info["invalid_actions"] == 1


def test_strict_text_actions_reject_prose() -> None:
    env = TextActions(PacingEnv("synth-tiny"), strict=True)
    env.reset(seed=0)
    *_, info = env.step("Sure! speed(2x)")
    assert "strict" in info["last_action_error"]
    *_, info = env.step("speed(2x)")
    assert info["last_action_error"] == ""


def test_pacing_features_and_masks() -> None:
    env = PacingFeatures(PacingEnv("synth-tiny", sensors=("vlm", "clip")))
    obs, _ = env.reset(seed=0)
    assert obs.shape == (len(FEATURES),)
    assert env.observation_space.contains(obs)
    mask = env.action_masks()
    assert mask.tolist() == [True, True, True, False, False, False, False, True]
    obs, *_ = env.step(ACTIONS.index("speed4"))
    mask = env.action_masks()
    assert mask[3:7].sum() == min(4, len(env.pacing.chunks) - 1)
    obs, *_ = env.step(ACTIONS.index("rewatch2"))
    assert env.pacing.window_chunks == (3, 3)
    assert not env.action_masks()[3:7].any()
    *_, terminated, _, info = env.step(ACTIONS.index("answer"))
    assert terminated
    assert info["episode"]["answer"] in "ABCD"


def test_pacing_features_pass_the_sb3_checker(checker_warnings: Callable[..., list[str]]) -> None:
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_checker import check_env

    env = PacingFeatures(PacingEnv("synth-tiny"))
    assert checker_warnings(check_env, env, warn=True) == []


def test_maskable_ppo_learns_a_few_steps() -> None:
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    env = PacingFeatures(PacingEnv("synth-tiny"))
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=32, batch_size=16, n_epochs=1, seed=0, device="cpu"
    )
    model.learn(total_timesteps=64)
    obs, _ = env.reset(seed=1)
    action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert env.action_masks()[int(action)]
    assert np.isfinite(obs).all()
