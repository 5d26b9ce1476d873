"""Trained stable-baselines3 pacing policies: training, held-out videos, bench by name."""

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import policies
from benchmarks.records import EpisodeLog
from policies import Policy, run_episode
from policies.learned_pacing import SB3PacingPolicy, read_meta
from policies.training.pacing import (
    TrainConfig,
    build_model,
    evaluate,
    train,
    training_samples,
)
from video_env.cli import main
from video_env.envs import PacingEnv
from video_env.errors import ConfigError, UnknownNameError
from video_env.synth import load_suite
from video_env.wrappers import ACTIONS, PacingFeatures, PacingFeatureTracker

pytest.importorskip("sb3_contrib")


class RandomLegalPacing(Policy):
    """Uniformly random legal actions of the SB3 action set (the RL baseline)."""

    env_kinds = ("pacing",)
    name = "random-legal"

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.rng = np.random.default_rng(seed)
        self.tracker = PacingFeatureTracker()

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        self.tracker.reset(observation, info)

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        self.tracker.observe(observation, info)
        legal = np.flatnonzero(self.tracker.action_masks())
        return self.tracker.action(int(self.rng.choice(legal)))


def test_training_videos_are_disjoint_from_the_suite() -> None:
    train_set = training_samples("synth-tiny", 3, seed=0)
    validation = training_samples("synth-tiny", 3, seed=0, split="validation")
    test_set = load_suite("synth-tiny")
    splits = [{s.meta["video_id"] for s in split} for split in (train_set, validation, test_set)]
    assert sum(map(len, splits)) == len(set().union(*splits)) == 9
    assert [s.id for s in training_samples("synth-tiny", 3, seed=0)] == [s.id for s in train_set]
    assert train_set[0].id != training_samples("synth-tiny", 3, seed=1)[0].id


def test_features_from_observations_match_the_wrapper() -> None:
    wrapped = PacingFeatures(PacingEnv("synth-tiny"))
    raw = PacingEnv("synth-tiny")
    tracker = PacingFeatureTracker()
    features, _ = wrapped.reset(seed=3)
    obs, info = raw.reset(seed=3)
    assert np.array_equal(tracker.reset(obs, info), features)
    for name in ("speed4", "rewatch3", "speed2", "rewatch1", "speed1"):
        assert tracker.action_masks()[ACTIONS.index(name)]  # rewatch is reachable
        features, *_ = wrapped.step(ACTIONS.index(name))
        obs, _, _, _, info = raw.step(tracker.action(ACTIONS.index(name)))
        assert np.array_equal(tracker.observe(obs, info), features)
        assert np.array_equal(tracker.action_masks(), wrapped.action_masks())
    assert any("rewatch" in str(s["action"]) for s in raw.abandon("test")["trajectory"])


def test_unknown_algorithm_and_missing_file_are_clear(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown algorithm"):
        TrainConfig(algo="a2c")
    with pytest.raises(ConfigError, match="no trained pacing policy"):
        policies.make(f"pacing-ppo:{tmp_path}")
    with pytest.raises(UnknownNameError, match=r"pacing-ppo:ARG"):
        policies.make("pacing-sac:x")


@pytest.mark.slow
def test_maskable_ppo_beats_the_random_policy_on_held_out_videos(tmp_path: Path) -> None:
    config = TrainConfig(
        suite="synth-tiny", steps=3072, seed=0, n_envs=4, n_steps=128, batch_size=128,
        eval_every=0, checkpoint_every=0,
    )  # fmt: skip
    result = train(config, tmp_path, tensorboard=False, log=lambda _: None)
    held_out = load_suite("synth-tiny")
    trained = evaluate(SB3PacingPolicy(tmp_path), held_out, seed=0)
    random_scores = [
        run_episode(PacingEnv(held_out), RandomLegalPacing(seed), 0, options={"index": i})
        for seed in range(3)
        for i in range(len(held_out))
    ]
    random_reward = float(np.mean([r["reward"] for r in random_scores]))
    untrained_model = build_model(config, PacingFeatures(PacingEnv(held_out)), None)
    untrained = evaluate(SB3PacingPolicy(untrained_model, "maskable-ppo"), held_out, seed=0)
    assert result.env_steps >= 3072
    assert trained["mean_reward"] > random_reward + 0.2, (trained, random_reward)
    assert trained["mean_reward"] > untrained["mean_reward"], (trained, untrained)  # it rose


@pytest.mark.slow
def test_train_cli_writes_a_policy_that_bench_runs_by_name(tmp_path: Path) -> None:
    out = tmp_path / "policy"
    args = ["train", "pacing", "--suite", "synth-tiny", "--steps", "256", "--n-envs", "2"]
    args += ["--eval-every", "128", "--eval-videos", "1", "--checkpoint-every", "128"]
    args += ["--sensors", "vlm", "clip", "--out", str(out), "--quiet"]
    assert main(args) == 0
    for name in ("policy.zip", "policy.json", "best/policy.zip", "evaluations.jsonl"):
        assert (out / name).is_file(), name
    assert list((out / "checkpoints").glob("*.zip"))
    assert list((out / "tb").rglob("events.out.tfevents.*"))
    assert read_meta(out)["sensors"] == ["vlm", "clip"]
    evaluations = [json.loads(line) for line in (out / "evaluations.jsonl").open()]
    assert len(evaluations) >= 2 and {"mean_reward", "accuracy"} <= set(evaluations[0])
    steps = [e["step"] for e in evaluations]
    assert steps == sorted(set(steps)), steps  # one row per step: the last is the final policy
    name = f"pacing-maskable-ppo:{out}"
    bench = tmp_path / "bench"
    args = ["bench", "--suite", "synth-tiny", "--envs", "pacing", "--limit", "2", "--workers", "1"]
    assert main([*args, "--policies", name, "--out", str(bench), "--quiet", "--no-plots"]) == 0
    records = EpisodeLog(bench).load()
    assert len(records) == 2
    for record in records:
        assert record["policy"] == name and record["error"] is None
        assert record["vlm_calls"] >= 1 and record["frames"] >= 20 and record["clip_calls"] >= 1
    assert name in (bench / "summary.md").read_text()


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_every_algorithm_trains_saves_and_runs_by_name(algo: str, tmp_path: Path) -> None:
    config = TrainConfig(
        algo=algo, suite="synth-tiny", steps=256, n_envs=2, n_steps=64, batch_size=64,
        eval_every=0, checkpoint_every=0,
    )  # fmt: skip
    train(config, tmp_path, tensorboard=False, log=lambda _: None)
    assert read_meta(tmp_path)["algo"] == algo
    policy = policies.make(f"pacing-{algo}:{tmp_path}")
    assert policy.name == f"pacing-{algo}:{tmp_path}"
    record = run_episode(PacingEnv("synth-tiny"), policy, 0, options={"index": 0})
    assert record["error"] is None and record["vlm_calls"] >= 1


def test_steps_are_the_steps_trained(tmp_path: Path) -> None:
    from policies.training.pacing import planned_steps, rollout_length

    short = TrainConfig(suite="synth-tiny", steps=512)  # 4 envs x 256 would be 1,024
    assert (rollout_length(short), planned_steps(short)) == (128, 512)
    long = TrainConfig(suite="synth-tiny", steps=400_000)
    assert (rollout_length(long), planned_steps(long)) == (256, 400_384)  # whole rollouts
    middle = TrainConfig(suite="synth-tiny", steps=1500)  # 2 rollouts of 188, not of 256
    assert (rollout_length(middle), planned_steps(middle)) == (188, 1504)
    assert planned_steps(TrainConfig(suite="synth-tiny", algo="dqn", steps=1000)) == 1008
    config = TrainConfig(
        suite="synth-tiny", steps=96, n_envs=2, n_steps=64, batch_size=64,
        eval_every=0, checkpoint_every=0,
    )  # fmt: skip
    lines: list[str] = []
    result = train(config, tmp_path, tensorboard=False, log=lines.append)
    assert result.env_steps == 96
    assert read_meta(tmp_path)["requested_steps"] == 96
    assert not any("rounded up" in line for line in lines)
