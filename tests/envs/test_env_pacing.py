"""The Pacing env: VideoScout's semantics, Gymnasium conformance, robustness."""

from collections.abc import Callable

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import video_env  # noqa: F401  (registers the ids)
from video_env import Interval, VideoQA
from video_env.actions import AnswerAction, InvalidAction, RewatchAction, SpeedAction
from video_env.envs import PacingEnv, PacingRules
from video_env.synth import generate_video, video_samples


@pytest.fixture(scope="module")
def samples() -> list[VideoQA]:
    video = generate_video("pace", seed=4, duration=600, n_needles=3)  # 30 s chunks, 20 chunks
    return video_samples(video)


def make(samples: list[VideoQA], **kw: object) -> PacingEnv:
    env = PacingEnv(samples, **kw)  # type: ignore[arg-type]
    env.reset(seed=0, options={"index": 0})
    return env


@pytest.mark.parametrize(
    ("duration", "chunk"),
    [
        (20, 10),
        (29.9, 10),
        (30, 15),
        (119, 15),
        (120, 20),
        (299, 20),
        (300, 30),
        (899, 30),
        (900, 45),
        (5400, 45),
    ],
)
def test_chunk_duration_table(duration: float, chunk: float) -> None:
    rules = PacingRules()
    assert rules.chunk_seconds(duration) == chunk
    chunks = rules.chunks(duration)
    assert chunks[0].start == 0
    assert chunks[-1].end == duration
    assert all(c.length <= chunk + 1e-9 for c in chunks)


@pytest.mark.parametrize(
    ("factor", "frames", "resolution", "coverage"),
    [(1, 20, 448, 1), (2, 16, 448, 2), (4, 12, 316, 4)],
)
def test_per_speed_frames_resolution_and_coverage(
    samples: list[VideoQA], factor: int, frames: int, resolution: int, coverage: int
) -> None:
    env = make(samples, pixel_observations=True)
    before = env.perception.vlm.usage.frames  # type: ignore[union-attr]
    obs, *_ = env.step(SpeedAction(factor))
    assert obs["n_frames"] == frames
    assert list(obs["chunks"]) == [2, 1 + coverage]
    np.testing.assert_allclose(obs["window"], [30, 30 * (1 + coverage)])
    stamps = obs["timestamps"][:frames]
    assert np.all((stamps > 30) & (stamps < 30 * (1 + coverage)))
    assert np.all(obs["timestamps"][frames:] == -1)
    pixels = obs["frames"]
    assert pixels[:frames, :resolution, :resolution].std() > 0
    assert not pixels[frames:].any()
    if resolution < 448:
        assert not pixels[:, resolution:, :].any()
    assert env.perception.vlm.usage.frames - before == frames  # type: ignore[union-attr]
    assert env.batch.size == (resolution, resolution)


def test_non_square_frames_keep_the_video_s_aspect(samples: list[VideoQA]) -> None:
    from policies.observed_frames import observed_batch
    from video_env.envs.pacing_rules import SpeedSpec

    wide = PacingRules(
        speeds={
            1: SpeedSpec(4, 224, 1, 126),
            2: SpeedSpec(4, 160, 2, 90),
            4: SpeedSpec(2, 160, 4, 90),
        },
        rewatch=SpeedSpec(4, 224, 1, 126),
    )
    env = make(samples, pixel_observations=True, rules=wide)
    assert env.observation_space["frames"].shape == (4, 126, 224, 3)
    obs, *_ = env.step(SpeedAction(2))
    assert env.batch.size == (160, 90)
    assert obs["frames"][:4, :90, :160].std() > 0
    assert not obs["frames"][:, 90:].any() and not obs["frames"][:, :, 160:].any()
    assert env.observation_space.contains(obs)
    batch = observed_batch(obs, env.turn_spec.size)
    assert batch.size == (160, 90) and len(batch) == 4
    np.testing.assert_array_equal(batch.pixels(), env.batch.pixels())
    assert PacingRules().speeds[1].size == (448, 448), "the paper's frames stay square"


def test_start_state(samples: list[VideoQA]) -> None:
    env = PacingEnv(samples)
    obs, info = env.reset(seed=3)
    assert list(obs["chunks"]) == [1, 1]
    assert obs["n_frames"] == 20
    assert obs["memory"] == ""
    assert obs["speed"] == 0
    assert obs["progress"][0] == pytest.approx(1 / 20)
    assert info["legal_actions"] == ["speed", "answer"]


def test_rewatch_legality_and_pointer_resumption(samples: list[VideoQA]) -> None:
    env = make(samples)
    obs, reward, *_, info = env.step(RewatchAction(1))  # window is a single chunk
    assert "several chunks" in info["last_action_error"]
    assert reward == pytest.approx(-0.1)
    obs, *_ = env.step(SpeedAction(4))  # chunks 2-5
    assert list(obs["chunks"]) == [2, 5]
    obs, *_, info = env.step(RewatchAction(6))
    assert "between 2 and 5" in info["last_action_error"]
    obs, *_, info = env.step(RewatchAction(3))
    assert info["last_action_error"] == ""
    assert list(obs["chunks"]) == [3, 3]
    assert obs["n_frames"] == 20
    assert obs["rewatching"] == 1
    _, *_, info = env.step(RewatchAction(4))  # a rewatch window is a single chunk
    assert info["last_action_error"]
    obs, *_ = env.step(SpeedAction(1))  # progress resumes after the original window
    assert list(obs["chunks"]) == [6, 6]


def test_end_of_video_leaves_only_answer(samples: list[VideoQA]) -> None:
    env = make(samples)
    for _ in range(5):
        obs, *_, info = env.step(SpeedAction(4))
    assert list(obs["chunks"]) == [18, 20]  # the last window is cut at the video's end
    assert obs["progress"][0] == 1.0
    assert info["legal_actions"] == ["answer"]
    obs, *_, info = env.step(SpeedAction(1))
    assert "only answer" in info["last_action_error"]
    obs, *_, info = env.step(RewatchAction(19))
    assert "only answer" in info["last_action_error"]


def test_timing_and_format_reward(samples: list[VideoQA]) -> None:
    env = PacingEnv(samples, sensors=())
    env.reset(seed=0, options={"index": 0})
    sample = env.sample
    end = max(iv.end for iv in sample.gt_intervals)
    reference = int(np.ceil(end / 30))  # chunk containing the evidence end
    for _ in range(3):
        env.step(SpeedAction(2))  # pointer: 1 + 1 + 6 chunks passed -> M = 7
    _, reward, terminated, _, info = env.step(AnswerAction(sample.answer, sample.gt_intervals[0]))  # type: ignore[arg-type]
    parts = info["episode"]["reward_parts"]
    assert terminated
    assert parts["acc"] == 1.0
    assert parts["fmt"] == 0.3
    assert parts["timing"] == pytest.approx(0.5 * min(7, reference) / max(7, reference))
    assert reward == pytest.approx(sum(parts.values()))
    assert info["episode"]["gtou"] == 1.0
    # one malformed turn removes r_fmt; a wrong answer removes r_timing
    env.reset(seed=0, options={"index": 0})
    env.step(InvalidAction("garbled", "???"))
    _, _, _, _, info = env.step(AnswerAction("Z"))
    assert info["episode"]["reward_parts"] == {"acc": 0.0, "fmt": 0.0, "timing": 0.0}


def test_memory_is_carried_and_bounded(samples: list[VideoQA]) -> None:
    env = make(samples, rules=PacingRules(memory_words=5))
    obs, *_ = env.step(SpeedAction(1, memory="saw a red umbrella"))
    assert obs["memory"] == "saw a red umbrella"
    obs, *_ = env.step(SpeedAction(1))  # None keeps the notes
    assert obs["memory"] == "saw a red umbrella"
    obs, *_, info = env.step(SpeedAction(1, memory="one two three four five six seven"))
    assert obs["memory"] == "one two three four five"
    assert info["memory_truncated"] is True


def test_answer_window_defaults_to_the_window_on_screen(samples: list[VideoQA]) -> None:
    env = make(samples)
    env.step(SpeedAction(2))
    *_, info = env.step(AnswerAction("A"))
    assert info["episode"]["window"] == [30.0, 90.0]


def test_episode_records_name_the_pacing_rules(samples: list[VideoQA]) -> None:
    from benchmarks.summary import policy_label
    from video_env.envs.pacing_rules import pixel_vlm_rules, rules_name

    custom = PacingRules(memory_words=50)
    names = []
    for rules in (None, pixel_vlm_rules(), custom):
        env = make(samples, rules=rules)
        *_, info = env.step(AnswerAction("A"))
        names.append(info["episode"]["pacing_rules"])
    assert names[:2] == ["paper", "pixel-vlm"]
    assert names[2].startswith("custom-") and names[2] == rules_name(PacingRules(memory_words=50))
    assert names[2] != rules_name(PacingRules(memory_words=51))
    assert rules_name(PacingRules(format_reward=1)) == rules_name(PacingRules(format_reward=1.0))
    assert rules_name(PacingRules.from_dict(custom.to_dict())) == names[2], "read back: same"
    env = make(samples, rules=pixel_vlm_rules())
    assert env.abandon("policy error")["pacing_rules"] == "pixel-vlm"
    assert policy_label({"policy": "p", "pacing_rules": "paper"}) == "p"
    assert policy_label({"policy": "p", "pacing_rules": "pixel-vlm"}) == "p"  # rules: a column


def test_a_lost_job_counts_in_the_row_of_its_policy_s_rules() -> None:
    from benchmarks.summary import summarize

    done = {"env": "pacing", "policy": "p", "pacing_rules": "pixel-vlm", "correct": True}
    lost = {"env": "pacing", "policy": "p", "correct": False, "error": "worker died"}
    (row,) = summarize([done, lost])
    assert (row["policy"], row["rules"]) == ("p", "pixel-vlm")
    assert (row["episodes"], row["failures"], row["accuracy"]) == (2, 1, 0.5)
    mixed = summarize([done, {**done, "pacing_rules": "paper"}, lost])
    assert [r["rules"] for r in mixed] == ["paper", "pixel-vlm", "unknown"]


def test_invalid_actions_end_the_episode_past_the_allowance(samples: list[VideoQA]) -> None:
    env = make(samples, max_invalid_actions=2)
    for k in range(3):
        _, reward, terminated, truncated, info = env.step(AnswerAction("A", Interval(0, 9999)))
        assert "outside the video" in info["last_action_error"]
        assert not terminated
        assert truncated == (k == 2)
    assert info["episode"]["ended_by"] == "invalid_actions"
    assert info["episode"]["correct"] is False
    with pytest.raises(RuntimeError, match="reset"):
        env.step(SpeedAction(1))


def test_wrong_python_types_raise(samples: list[VideoQA]) -> None:
    env = make(samples)
    with pytest.raises(TypeError):
        env.step("speed(2x)")
    with pytest.raises(TypeError):
        env.step(3)


@pytest.mark.parametrize(
    "kw", [{}, {"pixel_observations": True, "sensors": ("vlm", "clip")}, {"sensors": ()}]
)
def test_check_env_without_warnings(
    kw: dict[str, object], checker_warnings: Callable[..., list[str]]
) -> None:
    env = gym.make(
        "VideoEnv/Pacing-v0", dataset="synth-tiny", render_mode="rgb_array", **kw
    ).unwrapped
    assert checker_warnings(check_env, env, skip_render_check=False) == []


def test_registered_id_runs_offline_with_no_arguments() -> None:
    env = gym.make("VideoEnv/Pacing-v0")
    obs, info = env.reset(seed=0)
    assert info["simulated"] is True
    obs, *_ = env.step(SpeedAction(2))
    assert env.observation_space.contains(obs)


def rollout(seed: int) -> list[tuple[object, ...]]:
    env = PacingEnv("synth-tiny", sensors=("vlm", "clip"))
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    trace = []
    for _ in range(40):
        obs, reward, term, trunc, info = env.step(env.action_space.sample())
        trace.append(
            (obs["sensor"]["answer"], float(obs["sensor"]["confidence"][0]), reward, term, trunc)
        )
        if term or trunc:
            obs, _ = env.reset()
    return trace


def test_determinism_same_seed_same_trajectory() -> None:
    assert rollout(5) == rollout(5)
    assert rollout(5) != rollout(6)


def test_vector_envs() -> None:
    fns = [lambda: PacingEnv("synth-tiny") for _ in range(2)]
    sync = gym.vector.SyncVectorEnv(fns)
    obs, info = sync.reset(seed=1)
    actions = {
        "kind": np.array([0, 0]),
        "speed": np.array([1, 2]),
        "chunk": np.array([1, 1]),
        "answer": ("A", "B"),
        "has_window": np.array([0, 0]),
        "window": np.zeros((2, 2), np.float32),
        "memory": ("", ""),
    }
    obs, reward, term, trunc, info = sync.step(actions)
    assert list(obs["n_frames"]) == [16, 12]
    sync.close()
    async_env = gym.vector.AsyncVectorEnv(fns, shared_memory=False)
    obs, info = async_env.reset(seed=1)
    obs, *_ = async_env.step(actions)
    assert list(obs["n_frames"]) == [16, 12]
    async_env.close()


@settings(max_examples=25)
@given(st.integers(0, 10_000), st.lists(st.integers(0, 2**31 - 1), min_size=30, max_size=60))
def test_fuzz_random_structured_actions(seed: int, action_seeds: list[int]) -> None:
    env = PacingEnv("synth-tiny", max_invalid_actions=5)
    obs, _ = env.reset(seed=seed)
    last_pointer = env.pointer
    for s in action_seeds:
        env.action_space.seed(s)
        action = env.action_space.sample()
        if s % 3 == 0:  # bias towards forward moves so episodes go far
            action["kind"] = 0
        obs, reward, term, trunc, info = env.step(action)
        assert env.pointer >= last_pointer  # the forward pointer never moves back
        last_pointer = env.pointer
        assert env.observation_space.contains(obs)
        if term or trunc:
            episode = info["episode"]
            for key in ("gtou", "iou"):
                assert 0.0 <= episode[key] <= 1.0
            assert episode["iou"] <= episode["gtou"] + 1e-9
            obs, _ = env.reset()
            last_pointer = env.pointer


def test_return_includes_penalties_and_bad_dict_values_are_invalid(samples: list[VideoQA]) -> None:
    env = make(samples)
    base = {
        "chunk": 1,
        "answer": "A",
        "has_window": 0,
        "window": np.zeros(2, np.float32),
        "memory": "",
    }
    _, reward, *_, info = env.step({**base, "kind": 0, "speed": 5})
    assert "speed must be" in info["last_action_error"]
    _, reward, *_, info = env.step({**base, "kind": 7, "speed": 0})
    assert "kind must be" in info["last_action_error"]
    with pytest.raises(TypeError, match="answer text"):
        env.step(AnswerAction(5))  # type: ignore[arg-type]
    *_, info = env.step(AnswerAction("Z"))
    assert info["episode"]["return"] == pytest.approx(-0.2 + info["episode"]["reward"])
