"""The ClipQuery env: VideoAgent's search space, Gymnasium conformance, robustness."""

import itertools
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import video_env  # noqa: F401  (registers the ids)
from video_env.actions.types import AnswerAction, QueryAction, SegmentQuery
from video_env.backends.simulated import SimulatedCaptioner, SimulatedCLIP
from video_env.backends.text import LexicalEmbedder
from video_env.envs.clip_query import ClipQueryEnv
from video_env.envs.clip_query_rules import (
    candidate_times,
    released_initial_times,
    segments_between,
)
from video_env.envs.perception import Perception
from video_env.errors import ConfigError
from video_env.types import Interval
from video_env.video.sampling import uniform_times

_EMBEDDER = LexicalEmbedder()


def perception() -> Perception:
    """Simulated captioner and CLIP over the (fast) lexical embedder."""
    return Perception(
        vlm=None, captioner=SimulatedCaptioner(), clip=SimulatedCLIP(embedder=_EMBEDDER)
    )


def make(index: int = 0, **kw: Any) -> ClipQueryEnv:
    env = ClipQueryEnv("synth-tiny", perception=perception(), **kw)
    env.reset(seed=0, options={"index": index})
    return env


def query(*pairs: tuple[int, str]) -> QueryAction:
    return QueryAction(tuple(SegmentQuery(k, text) for k, text in pairs))


def frame_times(obs: dict[str, Any]) -> list[float]:
    return [float(f["time"][0]) for f in obs["frames"]]


def segment_windows(obs: dict[str, Any]) -> list[tuple[float, float]]:
    return [(float(s["window"][0]), float(s["window"][1])) for s in obs["segments"]]


def test_segments_and_candidates() -> None:
    segs = segments_between([10.0, 20.0], 30.0)
    assert segs == [Interval(0, 10), Interval(10, 20), Interval(20, 30)]
    assert segments_between([], 5.0) == [Interval(0, 5)]
    # seen first and last frames: no edge segments (VideoAgent's 4 segments of 5 frames)
    assert segments_between([0.0, 10.0, 29.0], 30.0, last_time=29.0) == [
        Interval(0, 10),
        Interval(10, 29),
    ]
    assert segments_between([0.0, 10.0], 30.0, last_time=29.0)[-1] == Interval(10, 30)
    np.testing.assert_allclose(candidate_times(Interval(10, 14), 1.0), [11, 12, 13])
    np.testing.assert_allclose(candidate_times(Interval(10.5, 12.2), 2.0), [11, 11.5, 12])
    assert len(candidate_times(Interval(3.2, 3.9), 1.0)) == 0


@pytest.mark.parametrize(
    ("duration", "times"),
    [
        (180.0, [0, 44, 89, 134, 179]),  # np.linspace(1, 180, 5, dtype=int) - 1
        (167.0, [0, 41, 83, 124, 166]),
        (180.5, [0, 45, 90, 135, 180]),  # 181 frames at 1 fps
        (3.0, [0, 1, 2]),  # fewer frames than asked: each once
    ],
)
def test_released_initial_frames(duration: float, times: list[float]) -> None:
    """VideoAgent's main.py: ``np.linspace(1, num_frames, 5, dtype=int)`` of 1 fps frames."""
    np.testing.assert_allclose(released_initial_times(duration, 5, 1.0), times)


def test_start_state() -> None:
    env = ClipQueryEnv("synth-tiny", perception=perception())
    obs, info = env.reset(seed=0, options={"index": 0})
    duration = env.video.duration
    expected = released_initial_times(duration, 5, 1.0)
    np.testing.assert_allclose(frame_times(obs), expected, rtol=1e-6)
    assert frame_times(obs)[0] == 0 and frame_times(obs)[-1] >= duration - 1
    assert all(f["caption"] for f in obs["frames"])
    assert env.perception.captioner.usage.caption_calls == 5  # type: ignore[union-attr]
    assert env.caption_calls == 5
    windows = segment_windows(obs)
    assert len(windows) == 4  # both ends seen: 4 segments between 5 frames
    assert windows[0][0] == 0 and windows[-1][1] == pytest.approx(expected[-1])
    assert obs["rounds_left"][0] == 2 and obs["frames_left"][0] == 27
    assert info["max_queries"] == 4
    assert obs["duration"][0] == pytest.approx(duration)
    assert info["legal_actions"] == ["query", "answer"]
    assert env.observation_space.contains(obs)


def test_bin_centres_are_an_option() -> None:
    env = ClipQueryEnv("synth-tiny", perception=perception(), initial_placement="centres")
    obs, _ = env.reset(seed=0, options={"index": 0})
    duration = env.video.duration
    np.testing.assert_allclose(frame_times(obs), uniform_times(Interval(0, duration), 5))
    windows = segment_windows(obs)
    assert len(windows) == 6
    assert windows[0][0] == 0 and windows[-1][1] == pytest.approx(duration)
    with pytest.raises(ConfigError):
        ClipQueryEnv("synth-tiny", perception=perception(), initial_placement="random")


def test_queries_per_round_are_capped_by_the_segments_unless_set() -> None:
    env = make(0)
    assert env.max_queries == len(env.segments) == 4
    obs, _, _, _, info = env.step(query((1, "a"), (1, "b"), (2, "c"), (3, "d")))
    assert info["last_action_error"] == "" and len(info["retrieved"]) == 4
    assert info["max_queries"] == len(obs["segments"]) == 8
    _, _, _, _, info = env.step(query(*[(1, "x")] * 9))
    assert "at most 8 queries" in info["last_action_error"]
    capped = make(0, max_queries_per_round=2)
    _, _, _, _, info = capped.step(query((1, "a"), (2, "b"), (3, "c")))
    assert "at most 2 queries" in info["last_action_error"]


def test_retrieval_stays_inside_the_segment_and_sees_new_times() -> None:
    env = make(1, max_rounds=3)
    obs = env._observation()
    for _ in range(3):
        segments, seen = list(env.segments), list(env.times)
        np.testing.assert_allclose(segment_windows(obs), [(s.start, s.end) for s in segments])
        longest = sorted(range(1, len(segments) + 1), key=lambda k: -segments[k - 1].length)
        texts = ("a clock", "a street sign", "a red umbrella")
        picks = list(zip(longest[:3], texts, strict=True))
        obs, _, _, _, info = env.step(query(*picks))
        assert info["last_action_error"] == ""
        assert len(info["retrieved"]) == 3
        for (k, _), got in zip(picks, info["retrieved"], strict=True):
            assert segments[k - 1].start < got["time"] < segments[k - 1].end
            assert all(abs(got["time"] - t) > 1e-3 for t in seen)
        times = frame_times(obs)
        assert times == sorted(times) and len(set(times)) == len(times)
        assert len(obs["segments"]) == len(times) - 1  # first and last frames seen
    assert obs["rounds_left"][0] == 0
    assert env._current_window() == Interval(env.last_retrieved, env.last_retrieved)  # type: ignore[arg-type]


def test_needle_queries_beat_chance() -> None:
    env = ClipQueryEnv("synth-tiny", perception=perception())
    hits = chance = 0.0
    for index in range(len(env.samples)):
        obs, _ = env.reset(seed=0, options={"index": index})
        needle = env.video.needle_for(env.sample.question)
        assert needle is not None
        windows = segment_windows(obs)
        k = next(i for i, (s, e) in enumerate(windows, 1) if s <= needle.start < e)
        _, _, _, _, info = env.step(query((k, needle.statement)))
        t = info["retrieved"][0]["time"]
        hits += needle.visible(t)
        segment = Interval(*windows[k - 1])
        candidates = candidate_times(segment, 1.0)
        chance += float(np.mean([needle.visible(c) for c in candidates]))
    assert hits >= chance + 3  # 12 questions


def test_budgets_and_answer_only_after_the_last_round() -> None:
    env = make(0, max_rounds=2, max_frames=8)
    obs, _, _, _, info = env.step(query((1, "a"), (2, "b")))
    assert obs["frames_left"][0] == 1 and obs["rounds_left"][0] == 1
    obs, reward, _, _, info = env.step(query((1, "a"), (2, "b")))  # needs 2, has 1
    assert "1 frame(s) left" in info["last_action_error"]
    assert reward == pytest.approx(-0.1)
    assert obs["frames_left"][0] == 1 and obs["rounds_left"][0] == 1
    obs, _, _, _, info = env.step(query((4, "c")))
    assert info["legal_actions"] == ["answer"]
    assert obs["frames_left"][0] == 0 and obs["rounds_left"][0] == 0
    _, _, _, _, info = env.step(query((1, "a")))
    assert "only answer is legal" in info["last_action_error"]
    assert env.frames_left == 0 and len(env.times) == 8


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (query((0, "a")), "does not exist"),
        (query((7, "a")), "does not exist"),
        (query((2, "   ")), "no description"),
        (QueryAction(()), "at least one"),
        (query(*[(1, "a")] * 5), "at most 4"),
    ],
)
def test_invalid_queries_spend_nothing(action: QueryAction, message: str) -> None:
    env = make(0)
    before = (list(env.times), env.rounds_left, env.caption_calls)
    obs, reward, terminated, truncated, info = env.step(action)
    assert message in info["last_action_error"]
    assert message in obs["last_action_error"]
    assert reward == pytest.approx(-0.1) and not (terminated or truncated)
    assert (list(env.times), env.rounds_left, env.caption_calls) == before
    assert info["retrieved"] == []


def test_exhausted_segment_is_invalid() -> None:
    env = make(0, candidate_fps=0.1, max_rounds=10, max_invalid_actions=50)  # few candidates
    segment = env.segments[0]
    n = len(candidate_times(segment, 0.1))
    _, _, _, _, info = env.step(query(*[(1, "x")] * (n + 1)))
    assert "unseen frame(s) left" in info["last_action_error"]
    _, _, _, _, info = env.step(query(*[(1, "x")] * n))
    assert info["last_action_error"] == ""
    for k in range(1, n + 2):  # the first n + 1 segments now lie inside the old segment 1
        _, _, _, _, info = env.step(query((k, "x")))
        assert "unseen frame(s) left" in info["last_action_error"]


def test_invalid_actions_end_the_episode_past_the_allowance() -> None:
    env = make(0, max_invalid_actions=2)
    for k in range(3):
        _, _, terminated, truncated, info = env.step(query((99, "a")))
        assert not terminated and truncated == (k == 2)
    episode = info["episode"]
    assert episode["ended_by"] == "invalid_actions"
    assert episode["gtou"] == 0.0
    with pytest.raises(RuntimeError, match="reset"):
        env.step(query((1, "a")))


def test_correct_answer_with_the_gt_window() -> None:
    env = make(2, call_cost=0.01)
    sample = env.sample
    _, reward, terminated, _, info = env.step(AnswerAction(sample.answer, sample.gt_intervals[0]))
    assert terminated
    parts = info["episode"]["reward_parts"]
    assert parts["acc"] == 1.0
    assert parts["gtou"] == pytest.approx(0.5) and info["episode"]["gtou"] == 1.0
    assert parts["cost"] == pytest.approx(-0.05)
    assert reward == pytest.approx(1.45)
    env.reset(seed=0, options={"index": 2})
    _, reward, *_ = env.step(AnswerAction(sample.answer))  # no window: GToU 0
    assert reward == pytest.approx(0.95)


def test_dict_actions_and_wrong_types() -> None:
    env = make(0)
    action = env.action_space.sample()
    action.update(kind=0, n_queries=2, segments=np.array([1, 4, 1, 1, 1]))
    action["texts"] = ("a clock", "a sign", "", "", "")
    _, _, _, _, info = env.step(action)
    assert info["last_action_error"] == "" and len(info["retrieved"]) == 2
    action["n_queries"] = 0
    _, _, _, _, info = env.step(action)
    assert "at least one" in info["last_action_error"]
    action.update(kind=1, answer="A", has_window=1, window=np.array([0.5, 0.2], np.float32))
    _, _, _, _, info = env.step(action)
    assert "window" in info["last_action_error"]
    with pytest.raises(TypeError):
        env.step("query(1, 'a')")
    with pytest.raises(TypeError):
        env.step(QueryAction((SegmentQuery("1", "a"),)))  # type: ignore[arg-type]


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigError):
        ClipQueryEnv("synth-tiny", perception=perception(), initial_frames=6, max_frames=5)
    with pytest.raises(ConfigError):
        ClipQueryEnv("synth-tiny", perception=Perception(captioner=SimulatedCaptioner()))


def test_check_env_without_warnings(checker_warnings: Callable[..., list[str]]) -> None:
    env = ClipQueryEnv("synth-tiny", perception=perception())
    assert checker_warnings(check_env, env, skip_render_check=True) == []


@pytest.mark.parametrize("mode", ["rgb_array", "ansi"])
def test_check_env_with_render_through_the_registry(
    mode: str, monkeypatch: pytest.MonkeyPatch, checker_warnings: Callable[..., list[str]]
) -> None:
    monkeypatch.setenv("VIDEO_ENV_TEXT_EMBEDDER", "lexical")  # fast default perception
    env = gym.make("VideoEnv/ClipQuery-v0", dataset="synth-tiny", render_mode=mode)
    assert checker_warnings(check_env, env.unwrapped, skip_render_check=False) == []


@pytest.mark.parametrize("mode", ["rgb_array", "ansi"])
def test_render(mode: str) -> None:
    env = make(0, render_mode=mode)
    env.step(query((2, "a clock")))
    picture = env.render()
    if mode == "ansi":
        assert "rounds left 1" in picture
    else:
        assert picture.dtype == np.uint8 and picture.ndim == 3


def test_registered_id_runs_offline_with_no_arguments() -> None:
    env = gym.make("VideoEnv/ClipQuery-v0")
    obs, info = env.reset(seed=0)
    assert info["simulated"] is True
    assert env.observation_space.contains(obs)


def rollout(seed: int) -> list[tuple[object, ...]]:
    env = ClipQueryEnv("synth-tiny", perception=perception())
    obs, _ = env.reset(seed=seed)
    trace: list[tuple[object, ...]] = [tuple(frame_times(obs))]
    script = [
        query((1, "a clock on the wall"), (6, "a street sign")),
        query((3, "a red umbrella")),
        query((99, "bad")),
        AnswerAction("A", Interval(10, 20)),
    ]
    for action in script:
        obs, reward, term, trunc, _ = env.step(action)
        captions = tuple(f["caption"] for f in obs["frames"])
        trace.append((tuple(frame_times(obs)), captions, reward, term, trunc))
    return trace


def test_determinism_same_seed_same_trajectory() -> None:
    assert rollout(5) == rollout(5)


@settings(max_examples=30)
@given(st.integers(0, 10_000), st.lists(st.integers(0, 2**31 - 1), min_size=20, max_size=40))
def test_fuzz_random_structured_actions(seed: int, action_seeds: list[int]) -> None:
    env = ClipQueryEnv("synth-tiny", perception=perception(), max_frames=12, max_invalid_actions=4)
    env.reset(seed=seed)
    for s in action_seeds:
        rng = np.random.default_rng(s)
        action: Any
        if s % 2:
            env.action_space.seed(s)
            action = env.action_space.sample()
            action["kind"] = int(s % 5 == 1)  # mostly queries
        else:
            words = ["x", " ", "a clock", "a street sign"]
            n = int(rng.integers(0, 4))
            action = query(*((int(rng.integers(0, 12)), str(rng.choice(words))) for _ in range(n)))
        obs, _, term, trunc, info = env.step(action)
        assert env.observation_space.contains(obs)
        assert env.rounds_used <= env.max_rounds and len(env.times) <= env.max_frames
        windows, times = segment_windows(obs), frame_times(obs)
        assert len(times) - 1 <= len(windows) <= len(times) + 1
        assert all(a[1] == b[0] for a, b in itertools.pairwise(windows))
        assert {w[0] for w in windows[1:]} <= {float(np.float32(t)) for t in times}
        if term or trunc:
            assert 0.0 <= info["episode"]["gtou"] <= 1.0
            env.reset()


class _StyleRecorder(SimulatedCaptioner):
    """A simulated captioner that notes the style and length it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, int]] = []

    def caption(self, frames: Any, max_tokens: int = 64, style: str = "light") -> str:
        self.asked.append((style, max_tokens))
        return super().caption(frames, max_tokens, style)


def test_frames_are_captioned_in_videoagents_detailed_style_by_default() -> None:
    for kw, expected in (({}, ("detailed", 192)), ({"caption_style": "light"}, ("light", 64))):
        recorder = _StyleRecorder()
        env = ClipQueryEnv(
            "synth-tiny",
            perception=Perception(None, recorder, SimulatedCLIP(embedder=_EMBEDDER)),
            **kw,
        )
        env.reset(seed=0, options={"index": 0})
        assert recorder.asked and set(recorder.asked) == {expected}
    with pytest.raises(ConfigError):
        ClipQueryEnv("synth-tiny", caption_style="verbose")
