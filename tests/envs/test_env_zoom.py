"""The Zoom env: FALCONEye's search space, Gymnasium conformance, robustness."""

import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence
from hypothesis import given, settings
from hypothesis import strategies as st

import video_env  # noqa: F401  (registers the ids)
from video_env import Interval, VideoQA
from video_env.actions import AnswerAction, EvaluateAction
from video_env.envs.zoom import ZoomEnv
from video_env.envs.zoom_rules import BUDGET_FLASH, ZoomRules
from video_env.errors import ConfigError
from video_env.synth import generate_video, video_samples
from video_env.video.base import Size

HD = Size(1280, 720)


def make(**kw: Any) -> ZoomEnv:
    env = ZoomEnv("synth-tiny", **kw)
    env.reset(seed=0, options={"index": 0})
    return env


def vlm_usage(env: ZoomEnv) -> tuple[int, int]:
    """(calls, frames) of the env's VLM so far."""
    vlm = env.perception.vlm
    assert vlm is not None
    return vlm.usage.vlm_calls, vlm.usage.frames


# -- Gymnasium conformance ------------------------------------------------------------


@pytest.mark.parametrize("kw", [{}, {"budget": BUDGET_FLASH, "max_windows_per_step": 2}])
def test_check_env_without_warnings(
    kw: dict[str, Any], checker_warnings: Callable[..., list[str]]
) -> None:
    env = gym.make("VideoEnv/Zoom-v0", dataset="synth-tiny", render_mode="rgb_array", **kw)
    assert checker_warnings(check_env, env.unwrapped, skip_render_check=False) == []


def test_observation_is_in_space_with_exact_dtypes() -> None:
    env = make()
    obs, *_ = env.step(EvaluateAction((Interval(0, 30), Interval(10, 15))))
    assert obs in env.observation_space
    assert obs["budget_left"].dtype == np.int64
    assert obs["duration"].dtype == np.float32
    assert isinstance(obs["clips"], tuple)
    assert isinstance(obs["evaluations"], tuple)
    assert obs["evaluations"][-1]["confidence"].dtype == np.float32
    assert obs["evaluations"][-1]["window"].tolist() == [10, 15]


# -- zoom-in sampling -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("length", "frames"),
    [
        (0.1, 1),
        (2.0, 4),
        (5.0, 10),
        (20.0, 22),
        (29.0, 16),
        (30.0, 15),
        (31.0, 30),
        (60.0, 30),
        (120.0, 60),
        (3600.0, 256),
    ],
)
def test_frames_follow_the_released_vqa_rule(length: float, frames: int) -> None:
    """FALCONEye's ``get_numframes_from_window(mode="vqa")``, jump at 30 s included."""
    assert ZoomRules().n_frames(length) == frames


@pytest.mark.parametrize(
    ("length", "frames"),
    [(5.0, 10), (20.0, 28), (29.0, 30), (30.0, 30), (31.0, 30), (60.0, 30), (120.0, 60)],
)
def test_linear_sampling_is_the_stated_intent(length: float, frames: int) -> None:
    """The comments' "2 -> 1 fps, then 1 -> 0.5 fps", continuous at 30 s."""
    rules = ZoomRules(sampling="linear")
    assert rules.n_frames(length) == frames
    assert abs(rules.fps(30.0 - 1e-9) - rules.fps(30.0 + 1e-9)) < 1e-6


def test_released_rule_jumps_at_30_seconds() -> None:
    rules = ZoomRules()
    assert rules.fps(30.0) < 0.51 and rules.fps(30.001) > 0.98


@pytest.mark.parametrize(
    ("length", "frames"), [(1.0, 2), (2.0, 4), (5.0, 4), (60.0, 30), (90.0, 32)]
)
def test_captions_follow_the_released_captioning_rule(length: float, frames: int) -> None:
    assert ZoomRules().caption_frames(length) == frames


def test_pixel_budget_interpolates_between_levels() -> None:
    rules = ZoomRules()
    assert rules.pixel_budget(1) == rules.pixel_budget(5) == 824 * 1462
    assert rules.pixel_budget(60) == rules.pixel_budget(600) == 672 * 1204
    assert rules.pixel_budget(32.5) == round((824 * 1462 + 672 * 1204) / 2)
    near, far = rules.frame_size(HD, 5), rules.frame_size(HD, 60)
    assert near.pixels > far.pixels
    assert near.pixels <= 824 * 1462 and far.pixels <= 672 * 1204
    assert abs(far.width / far.height - 16 / 9) < 0.05
    assert far.width % 28 == 0 and far.height % 28 == 0


@pytest.mark.parametrize(
    ("length", "frames"), [(5.0, 10), (20.0, 22), (29.0, 16), (31.0, 30), (60.0, 30)]
)
def test_evaluation_frames_in_the_env(length: float, frames: int) -> None:
    env = make()
    calls, seen = vlm_usage(env)
    env.step(EvaluateAction((Interval(30, 30 + length),)))
    assert vlm_usage(env) == (calls + 1, seen + frames)
    assert len(env._last_times) == frames
    assert all(30 <= t <= 30 + length for t in env._last_times)


def test_an_hour_window_is_capped_at_256_frames() -> None:
    samples = video_samples(generate_video("hour", seed=3, duration=3700, n_needles=1))
    env = ZoomEnv(samples)
    env.reset(seed=0)
    calls, seen = vlm_usage(env)
    env.step(EvaluateAction((Interval(0, 3600),)))
    assert vlm_usage(env) == (calls + 1, seen + 256)


def test_short_windows_get_more_visual_tokens_per_frame() -> None:
    env = make()
    vlm = env.perception.vlm
    assert vlm is not None
    per_frame = []
    for window in (Interval(0, 5), Interval(0, 60)):
        before = vlm.usage
        env.step(EvaluateAction((window,)))
        spent = vlm.usage - before
        per_frame.append(spent.visual_tokens / spent.frames)
    assert per_frame[0] > per_frame[1]


def test_rules_reject_bad_numbers() -> None:
    with pytest.raises(ConfigError):
        ZoomRules(short_s=60, long_s=5)
    with pytest.raises(ConfigError):
        ZoomRules(sampling="cubic")
    with pytest.raises(ConfigError):
        ZoomRules(min_fps=3.0)
    with pytest.raises(ConfigError):
        ZoomRules(max_frames=0)
    with pytest.raises(ConfigError):
        ZoomEnv("synth-tiny", max_windows_per_step=0)


# -- reset ------------------------------------------------------------------------------


@pytest.mark.parametrize("index", [0, 4, 8])
def test_reset_captions_every_level1_clip(index: int) -> None:
    env = ZoomEnv("synth-tiny")
    captioner = env.perception.captioner
    assert captioner is not None
    before = captioner.usage.caption_calls
    obs, info = env.reset(seed=0, options={"index": index})
    duration = env.video.duration
    clips = obs["clips"]
    assert len(clips) == math.ceil(duration / 60)
    assert captioner.usage.caption_calls - before == len(clips)
    assert [c["window"][0] for c in clips] == [60.0 * i for i in range(len(clips))]
    assert clips[-1]["window"][1] == pytest.approx(duration)
    assert all(0 < len(c["caption"].split()) <= 15 for c in clips)
    assert obs["evaluations"] == ()
    assert obs["budget_left"].tolist() == [45]
    assert info["legal_actions"] == ["evaluate", "answer"]
    obs, _, _, _, info = env.step(AnswerAction("A"))
    assert info["episode"]["caption_calls"] == len(clips)
    assert [kind for *_, kind in info["episode"]["explored"]] == ["caption"] * len(clips)


# -- budget -----------------------------------------------------------------------------


def test_budget_is_spent_per_window_and_never_exceeded() -> None:
    env = make(budget=5, max_windows_per_step=2)
    two = EvaluateAction((Interval(0, 10), Interval(10, 20)))
    for left in (3, 1):
        obs, reward, *_ = env.step(two)
        assert obs["budget_left"].tolist() == [left] and reward == 0
    obs, _, _, _, info = env.step(two)
    assert "only 1 evaluations are left" in info["last_action_error"]
    assert obs["budget_left"].tolist() == [1]
    obs, _, _, _, info = env.step(EvaluateAction((Interval(20, 30),)))
    assert obs["budget_left"].tolist() == [0] and info["legal_actions"] == ["answer"]
    obs, reward, terminated, _, info = env.step(EvaluateAction((Interval(30, 40),)))
    assert "budget" in info["last_action_error"] and not terminated
    assert reward == pytest.approx(-env.invalid_action_penalty)
    assert len(obs["evaluations"]) == 5
    *_, info = env.step(AnswerAction("A"))
    assert info["episode"]["vlm_calls"] == 5


# -- invalid actions ----------------------------------------------------------------


def _invalid_actions(duration: float) -> list[Any]:
    many = {"kind": 0, "windows": np.zeros((8, 2), np.float32), "n_windows": 0}
    reversed_dict = dict(many, n_windows=1)
    reversed_dict["windows"] = np.array([[0.5, 0.2]] * 8, np.float32)
    return [
        EvaluateAction((Interval(10, duration + 5),)),  # outside
        EvaluateAction((Interval(duration + 1, duration + 9),)),  # outside
        EvaluateAction((Interval(12, 12),)),  # zero length
        EvaluateAction(()),  # no window
        EvaluateAction(tuple(Interval(i, i + 1) for i in range(9))),  # too many
        reversed_dict,  # reversed
        many,  # n_windows = 0
        {"kind": 0, "windows": np.full((8, 2), 0.3, np.float32), "n_windows": 1},  # empty
        {"kind": 1, "answer": "", "has_window": 0, "window": np.zeros(2, np.float32)},
    ]


@pytest.mark.parametrize("case", range(9))
def test_invalid_actions_are_reported_and_cost_nothing(case: int) -> None:
    env = make()
    action = _invalid_actions(env.video.duration)[case]
    calls = vlm_usage(env)
    obs, reward, terminated, truncated, info = env.step(action)
    assert info["last_action_error"] and obs["last_action_error"] == info["last_action_error"]
    assert vlm_usage(env) == calls
    assert obs["budget_left"].tolist() == [45] and obs["evaluations"] == ()
    assert reward == pytest.approx(-0.1)
    assert not terminated and not truncated
    assert info["invalid_actions"] == 1


def test_one_bad_window_spoils_the_whole_step() -> None:
    env = make()
    obs, *_ = env.step(EvaluateAction((Interval(0, 10), Interval(5, 5))))
    assert obs["evaluations"] == () and "empty" in obs["last_action_error"]


def test_too_many_invalid_actions_truncate_with_an_episode_record() -> None:
    env = make(max_invalid_actions=1)
    bad = EvaluateAction((Interval(3, 3),))
    *_, truncated, info = env.step(bad)
    assert not truncated
    *_, truncated, info = env.step(bad)
    assert truncated
    episode = info["episode"]
    assert episode["ended_by"] == "invalid_actions" and episode["gtou"] == 0


def test_wrong_python_types_raise() -> None:
    env = make()
    with pytest.raises(TypeError):
        env.step("evaluate([0, 10])")
    with pytest.raises(TypeError):
        env.step(EvaluateAction(((0, 10),)))  # type: ignore[arg-type]
    # a dict's values are data from outside: a wrong type is an invalid action (issue 25)
    *_, info = env.step({"kind": 0, "windows": "soon", "n_windows": 1})
    assert "malformed action" in info["last_action_error"]


def test_dict_windows_are_fractions_of_the_duration() -> None:
    env = make()
    windows = np.zeros((8, 2), np.float32)
    windows[:2] = [[0.0, 0.5], [0.5, 1.0]]
    obs, *_ = env.step({"kind": 0, "windows": windows, "n_windows": 2})
    half = env.video.duration / 2
    got = np.array([e["window"] for e in obs["evaluations"]])
    np.testing.assert_allclose(got, [[0, half], [half, env.video.duration]], rtol=1e-6)


def test_a_float32_duration_is_a_legal_end() -> None:
    env = make()
    end = float(np.float32(env.video.duration + 0.004))
    obs, *_ = env.step(EvaluateAction((Interval(end - 10, end),)))
    assert obs["last_action_error"] == ""
    assert obs["evaluations"][0]["window"][1] == np.float32(env.video.duration)


# -- answers and rewards ----------------------------------------------------------------


def _truth(env: ZoomEnv) -> tuple[str, Interval]:
    sample: VideoQA = env.sample  # tests only: policies never read the sample
    assert sample.answer is not None  # the option letter for MCQs
    return sample.answer, sample.gt_intervals[0]


def test_correct_answer_with_the_truth_window() -> None:
    env = make(call_cost=0.1)
    env.step(EvaluateAction((Interval(0, 60), Interval(60, 120))))
    answer, window = _truth(env)
    _, reward, terminated, _, info = env.step(AnswerAction(answer, window))
    episode = info["episode"]
    assert terminated and episode["correct"] is True
    assert episode["gtou"] == 1.0
    assert episode["reward_parts"] == pytest.approx({"acc": 1.0, "gtou": 0.5, "cost": -0.2})
    assert reward == pytest.approx(1.3) == episode["reward"]
    for key in ("answer", "window", "iou", "turns", "frames", "vlm_calls", "explored"):
        assert key in episode
    with pytest.raises(RuntimeError):
        env.step(AnswerAction(answer))


def test_answer_without_window_uses_the_most_confident_evaluation() -> None:
    env = make()
    obs, *_ = env.step(EvaluateAction(tuple(Interval(i * 20, i * 20 + 20) for i in range(6))))
    best = max(obs["evaluations"], key=lambda e: float(e["confidence"][0]))
    *_, info = env.step(AnswerAction("A"))
    assert info["episode"]["window"] == pytest.approx(best["window"].tolist())


def test_answer_without_window_or_evaluation_has_no_window() -> None:
    env = make()
    *_, info = env.step({"kind": 1, "answer": "B", "has_window": 0, "window": np.zeros(2)})
    assert info["episode"]["window"] is None
    assert info["episode"]["reward_parts"]["gtou"] == 0


def test_render_modes() -> None:
    for mode in ("ansi", "rgb_array"):
        env = make(render_mode=mode)
        obs, *_ = env.step(EvaluateAction((Interval(0, 5),)))
        frame = env.render()
        if mode == "ansi":
            assert "budget 44 of 45 left" in frame
            assert f"turn {int(obs['turn'][0])} " in frame  # the observation's turn
        else:
            assert frame.dtype == np.uint8 and frame.ndim == 3


# -- determinism and fuzzing ----------------------------------------------------------


def _rollout(seed: int) -> list[Any]:
    env = ZoomEnv("synth-tiny", budget=6)
    out: list[Any] = [env.reset(seed=seed)[0]]
    script: list[Any] = [
        EvaluateAction((Interval(0, 60), Interval(30, 35))),
        EvaluateAction((Interval(0, 0),)),
        EvaluateAction((Interval(10, 30), Interval(40, 45), Interval(50, 110))),
        AnswerAction("C"),
    ]
    for action in script:
        obs, reward, terminated, truncated, info = env.step(action)
        out += [obs, reward, terminated, truncated, info]
    return out


def test_same_seed_same_rollout() -> None:
    assert data_equivalence(_rollout(7), _rollout(7), exact=True)
    assert not data_equivalence(_rollout(7)[0], _rollout(8)[0])


_WINDOW = st.tuples(st.floats(0, 260), st.floats(0, 80))
_ACTION = st.one_of(
    st.just("sample"),
    st.lists(_WINDOW, max_size=10).map(
        lambda ws: EvaluateAction(tuple(Interval(s, s + d) for s, d in ws))
    ),
    st.builds(
        AnswerAction,
        st.sampled_from(["A", "B", "blue", ""]),
        st.none() | _WINDOW.map(lambda w: Interval(w[0], w[0] + w[1])),
    ),
)


@settings(max_examples=40)
@given(seed=st.integers(0, 2**16), actions=st.lists(_ACTION, min_size=10, max_size=20))
def test_fuzz_actions_never_crash_or_overspend(seed: int, actions: list[Any]) -> None:
    env = ZoomEnv("synth-tiny", budget=6, max_windows_per_step=3)
    env.action_space.seed(seed)
    env.reset(seed=seed)
    start = vlm_usage(env)[0]
    for action in actions:
        chosen = env.action_space.sample() if action == "sample" else action
        obs, _, terminated, truncated, info = env.step(chosen)
        assert obs in env.observation_space
        assert 0 <= obs["budget_left"][0] <= 6
        assert vlm_usage(env)[0] - start == 6 - obs["budget_left"][0]
        if terminated or truncated:
            assert 0.0 <= info["episode"]["gtou"] <= 1.0
            assert info["episode"]["vlm_calls"] <= 6
            env.reset(seed=seed + 1)
            start = vlm_usage(env)[0]
