"""Train pacing policies with stable-baselines3 on synthetic videos (``video-env train pacing``).

Three disjoint sets of videos, all drawn like the named suite's (same lengths and needle
counts): *training* videos and *validation* videos, generated from their own root seeds,
and the suite's own videos, the *test* set that no part of training sees. The periodic
evaluation (TensorBoard ``eval/*``, ``evaluations.jsonl``, the ``best/`` policy) runs on
the validation videos; ``video-env bench --suite SUITE`` scores the saved policy on the
test set, beside the fixed schedules on the same episodes.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from policies.learned_pacing import ALGOS, META_FILE, MODEL_FILE, SB3PacingPolicy, algo_class
from policies.runner import run_episode
from video_env._optional import require
from video_env.envs.arguments import DEFAULT_SUITE
from video_env.envs.pacing import PacingEnv
from video_env.errors import ConfigError
from video_env.synth.generate import generate_video
from video_env.synth.questions import video_samples
from video_env.synth.suites import get_suite, load_suite
from video_env.types import VideoQA
from video_env.wrappers.sb3 import PacingFeatures

#: Offsets of the training and validation videos' root seeds from the suite's.
SPLIT_SEED_OFFSETS = {"train": 1_000_003, "validation": 2_000_003}


@dataclass(frozen=True)
class TrainConfig:
    """Settings of one training run (all saved in ``policy.json``).

    Attributes:
        algo: ``maskable-ppo``, ``ppo`` or ``dqn``.
        suite: Synthetic suite whose kind of videos to train on; its own videos are the
            test set, never seen in training.
        steps: Environment steps of training. PPO learns from whole rollouts
            (``n_envs × n_steps``): a run shorter than one rollout shortens the rollout to
            fit; a longer one is rounded up to whole rollouts (:func:`planned_steps`).
        seed: Seed of the model, the envs and the training videos.
        train_videos: Training videos generated (default: the suite's count x 4).
        n_envs: Vectorised envs.
        subprocess: Run the envs in subprocesses (``SubprocVecEnv``) instead of in-process.
        sensors: Pacing sensors the policy reads (``vlm``; ``clip`` adds relevances).
        eval_every: Steps between evaluations on the validation videos (0: none).
        eval_videos: Validation videos generated (default: the suite's count).
        checkpoint_every: Steps between checkpoints (0: none).
        learning_rate: Optimiser step size.
        gamma: Discount.
        n_steps: Rollout length per env (PPO).
        batch_size: Minibatch size.
        ent_coef: Entropy bonus (PPO).
        progress_bar: Show SB3's progress bar.
        torch_threads: Torch CPU threads while training (the policy is a tiny MLP: more
            threads only contend with the envs; 0 leaves torch's default).
    """

    algo: str = "maskable-ppo"
    suite: str = DEFAULT_SUITE
    steps: int = 100_000
    seed: int = 0
    train_videos: int | None = None
    n_envs: int = 4
    subprocess: bool = False
    sensors: tuple[str, ...] = ("vlm",)
    eval_every: int = 20_000
    eval_videos: int | None = None
    checkpoint_every: int = 50_000
    learning_rate: float = 3e-4
    gamma: float = 0.995
    n_steps: int = 256
    batch_size: int = 256
    ent_coef: float = 0.01
    progress_bar: bool = False
    torch_threads: int = 1

    def __post_init__(self) -> None:
        if self.algo not in ALGOS:
            raise ConfigError(f"unknown algorithm {self.algo!r}; known: {list(ALGOS)}")
        if self.steps < 1 or self.n_envs < 1:
            raise ConfigError("steps and n_envs must be >= 1")
        get_suite(self.suite)  # an unknown suite fails before anything is created


def training_samples(suite: str, n_videos: int, seed: int, split: str = "train") -> list[VideoQA]:
    """Samples of ``n_videos`` new videos drawn like ``suite``'s, disjoint from it.

    Video ids are ``<split><seed>-<suite>-NNN``; the root seed is the suite's plus the
    split's offset (:data:`SPLIT_SEED_OFFSETS`) and ``seed``.
    """
    spec = get_suite(suite)
    root = np.random.SeedSequence([spec.seed + SPLIT_SEED_OFFSETS[split], seed])
    seeds = root.generate_state(n_videos * 3, dtype=np.uint32)
    samples: list[VideoQA] = []
    for i in range(n_videos):
        rng = np.random.default_rng(int(seeds[3 * i]))
        duration = float(round(rng.uniform(*spec.duration_s)))
        n = int(rng.integers(spec.needles_per_video[0], spec.needles_per_video[1] + 1))
        video = generate_video(
            f"{split}{seed}-{suite}-{i:03d}", int(seeds[3 * i + 1]), duration, n, spec.categories
        )
        samples += video_samples(video, source=f"{split}-{suite}")
    return samples


def make_vec_env(config: TrainConfig, samples: Sequence[VideoQA]) -> Any:
    """``n_envs`` Monitor-wrapped :class:`PacingFeatures` envs over ``samples``."""
    env_util = require("stable_baselines3.common.env_util", "rl", "training pacing policies")
    vec = require("stable_baselines3.common.vec_env", "rl", "training pacing policies")
    sensors = config.sensors

    def build() -> PacingFeatures:
        return PacingFeatures(PacingEnv(list(samples), sensors=sensors))

    return env_util.make_vec_env(
        build,
        n_envs=config.n_envs,
        seed=config.seed,
        vec_env_cls=vec.SubprocVecEnv if config.subprocess else vec.DummyVecEnv,
    )


def evaluate(
    policy: SB3PacingPolicy, samples: Sequence[VideoQA], seed: int = 0
) -> dict[str, float]:
    """Mean reward, accuracy, VLM calls, frames and turns of ``policy`` on ``samples``.

    Runs each sample once with reset seed ``seed`` through the benchmark's episode loop
    (as ``video-env bench --seeds SEED`` does).
    """
    env = PacingEnv(list(samples), **dict(policy.env_kwargs.get("pacing", {})))
    records = [run_episode(env, policy, seed, options={"index": i}) for i in range(len(samples))]
    return {
        "mean_reward": float(np.mean([r.get("reward", 0.0) for r in records])),
        "accuracy": float(np.mean([bool(r.get("correct")) for r in records])),
        "vlm_calls": float(np.mean([r.get("vlm_calls", 0) for r in records])),
        "frames": float(np.mean([r.get("frames", 0) for r in records])),
        "turns": float(np.mean([r.get("turns", 0) for r in records])),
        "rewatch_rate": float(np.mean([_rewatched(r) for r in records])),
    }


def _rewatched(record: dict[str, Any]) -> bool:
    return any(
        "rewatch" in str(step.get("action", "")).lower() for step in record.get("trajectory") or []
    )


#: Environment steps per env between DQN updates (SB3's ``train_freq`` default).
DQN_TRAIN_FREQ = 4


def rollout_length(config: TrainConfig) -> int:
    """Steps per env of one PPO rollout: at most ``n_steps``, as few as fit ``steps``.

    With ``k`` rollouts of ``n_steps`` needed to cover ``steps``, the rollout is shortened
    to the least length for which ``k`` rollouts still cover it (a run of 512 steps on 4
    envs: 128, not 256; 100,000 steps keep 256).
    """
    per_env = math.ceil(config.steps / config.n_envs)
    rollouts = math.ceil(per_env / config.n_steps)
    return max(1, math.ceil(per_env / rollouts))


def planned_steps(config: TrainConfig) -> int:
    """The environment steps a run takes: ``steps`` rounded up to whole collections.

    PPO collects whole rollouts of ``n_envs × rollout_length``; DQN collects
    ``n_envs × DQN_TRAIN_FREQ`` steps between updates.
    """
    per_call = config.n_envs * (DQN_TRAIN_FREQ if config.algo == "dqn" else rollout_length(config))
    return math.ceil(config.steps / per_call) * per_call


def build_model(config: TrainConfig, env: Any, tensorboard_log: str | None) -> Any:
    """A fresh model of ``config.algo`` on ``env``."""
    cls = algo_class(config.algo)
    common: dict[str, Any] = {
        "learning_rate": config.learning_rate,
        "gamma": config.gamma,
        "seed": config.seed,
        "device": "cpu",
        "verbose": 0,
        "tensorboard_log": tensorboard_log,
    }
    if config.algo == "dqn":
        return cls(
            "MlpPolicy", env, learning_starts=1000, exploration_fraction=0.3,
            train_freq=DQN_TRAIN_FREQ, batch_size=config.batch_size, **common,
        )  # fmt: skip
    n_steps = rollout_length(config)  # a minibatch never exceeds the (shortened) rollout
    batch_size = min(config.batch_size, n_steps * config.n_envs)
    return cls(
        "MlpPolicy", env, n_steps=n_steps, batch_size=batch_size, ent_coef=config.ent_coef,
        n_epochs=4, **common,
    )  # fmt: skip


@dataclass
class TrainResult:
    """What a training run wrote and measured."""

    folder: Path
    model_path: Path
    evaluations: list[dict[str, float]]
    train_seconds: float
    train_cpu_seconds: float
    env_steps: int


def train(
    config: TrainConfig,
    out: str | Path,
    *,
    tensorboard: bool = True,
    log: Callable[[str], None] | None = None,
) -> TrainResult:
    """Train, evaluate on validation videos, checkpoint and save a policy into ``out``.

    ``out`` gets ``policy.zip`` + ``policy.json`` (the final policy, runnable as
    ``pacing-<algo>:OUT``), ``best/`` (the best validation evaluation), ``checkpoints/``,
    ``evaluations.jsonl`` and ``tb/`` (TensorBoard logs). The periodic evaluation does
    not change training: the final policy is the same with or without it.
    """
    callbacks = require("stable_baselines3.common.callbacks", "rl", "training pacing policies")
    log = log or _print
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    n_train = config.train_videos or 4 * get_suite(config.suite).n_videos
    train_samples = training_samples(config.suite, n_train, config.seed)
    n_validation = config.eval_videos or get_suite(config.suite).n_videos
    validation = training_samples(config.suite, n_validation, config.seed, "validation")
    _check_disjoint(train_samples, validation, load_suite(config.suite))
    env = make_vec_env(config, train_samples)
    tb_dir = str(folder / "tb") if tensorboard else None
    if tensorboard:
        require("tensorboard", "rl", "TensorBoard logs")
    if config.torch_threads > 0:
        require("torch", "rl").set_num_threads(config.torch_threads)
    model = build_model(config, env, tb_dir)
    planned = planned_steps(config)
    if planned != config.steps:
        log(
            f"training {planned} environment steps: {config.steps} rounded up to whole "
            f"rollouts of {config.n_envs} envs x {rollout_length(config)} steps"
        )
    meta = {
        **asdict(config),
        "train_samples": len(train_samples),
        "validation_samples": len(validation),
    }
    evaluator = _Validation(config, validation, folder, meta, log, callbacks.BaseCallback)
    hooks: list[Any] = [evaluator]
    if config.checkpoint_every > 0:
        hooks.append(
            callbacks.CheckpointCallback(
                max(1, config.checkpoint_every // config.n_envs),
                str(folder / "checkpoints"),
                name_prefix=config.algo,
            )
        )
    started, cpu_started = time.perf_counter(), time.process_time()
    model.learn(
        config.steps,
        callback=callbacks.CallbackList(hooks),
        progress_bar=config.progress_bar,
        tb_log_name=config.algo,
    )
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu_started  # this process (with its envs, unless
    env.close()  # --subprocess) on the CPU, however loaded the machine is
    meta.update(
        train_seconds=round(seconds, 1),
        train_cpu_seconds=round(cpu_seconds, 1),
        requested_steps=config.steps,
        env_steps=int(model.num_timesteps),
    )
    save_policy(model, folder, meta)
    evaluator.final(model)
    return TrainResult(
        folder, folder / MODEL_FILE, evaluator.history, seconds, cpu_seconds, model.num_timesteps
    )


def _print(message: str) -> None:
    print(message, flush=True)


def save_policy(model: Any, folder: Path, meta: dict[str, Any]) -> None:
    """Write ``policy.zip`` and ``policy.json`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    model.save(str(folder / MODEL_FILE))
    (folder / META_FILE).write_text(json.dumps(meta, indent=2, default=list) + "\n")


def _check_disjoint(*splits: Sequence[VideoQA]) -> None:
    ids = [{s.meta.get("video_id") for s in split} for split in splits]
    if sum(len(i) for i in ids) != len(set().union(*ids)):
        raise ConfigError("training, validation and test videos overlap")  # pragma: no cover


def _Validation(  # noqa: N802 - a class factory: SB3's base class is imported lazily
    config: TrainConfig,
    validation: Sequence[VideoQA],
    folder: Path,
    meta: dict[str, Any],
    log: Callable[[str], None],
    base: Any,
) -> Any:
    class Validation(base):  # type: ignore[misc]
        """Every ``eval_every`` steps: score on the validation videos, log, keep the best."""

        def __init__(self) -> None:
            super().__init__()
            self.history: list[dict[str, float]] = []
            self.best = -np.inf
            self.next_eval = config.eval_every

        def _on_step(self) -> bool:
            if config.eval_every > 0 and self.num_timesteps >= self.next_eval:
                self.next_eval += config.eval_every
                if self.num_timesteps < config.steps:  # the last is :meth:`final`'s, after
                    self._evaluate(self.model)  # the update of the rollout that reached it
            return True

        def _evaluate(self, model: Any) -> dict[str, float]:
            policy = SB3PacingPolicy(model, config.algo, sensors=config.sensors)
            scores = {"step": float(self.num_timesteps), **evaluate(policy, validation)}
            self.history.append(scores)
            with (folder / "evaluations.jsonl").open("a") as f:
                f.write(json.dumps(scores) + "\n")
            for key, value in scores.items():
                if key != "step":
                    self.logger.record(f"eval/{key}", value)
            log(
                f"step {int(scores['step'])}: validation reward {scores['mean_reward']:.3f}, "
                f"accuracy {scores['accuracy']:.3f}, VLM calls {scores['vlm_calls']:.1f}"
            )
            if scores["mean_reward"] > self.best:
                self.best = scores["mean_reward"]
                save_policy(model, folder / "best", {**meta, "evaluation": scores})
            return scores

        def final(self, model: Any) -> None:
            if config.eval_every > 0:
                self._evaluate(model)

    return Validation()
