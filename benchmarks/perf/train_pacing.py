"""Environment steps/s inside MaskablePPO training against the env's raw step rate.

Run: ``python -m benchmarks.perf.train_pacing [--steps 8192] [--n-envs 4]``

1. Raw rate: :class:`~video_env.wrappers.PacingFeatures` over synth-quick-like training
   videos, stepped with random legal actions (no learning), in this process.
2. Training rate: ``MaskablePPO`` (the ``video-env train pacing`` defaults, torch on one
   thread) learning for the same number of steps on ``--n-envs`` vectorised copies of the
   same env (rollouts + gradient updates; no evaluation, checkpoints or TensorBoard).

Target: training is no slower than 3x the raw rate (raw / training <= 3).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from policies.training.pacing import TrainConfig, build_model, make_vec_env, training_samples
from video_env.envs import PacingEnv
from video_env.types import VideoQA
from video_env.wrappers import PacingFeatures


def raw_rate(samples: list[VideoQA], steps: int) -> float:
    env = PacingFeatures(PacingEnv(samples))
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        legal = np.flatnonzero(env.action_masks())
        _, _, terminated, truncated, _ = env.step(int(rng.choice(legal)))
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def training_rate(samples: list[VideoQA], steps: int, n_envs: int) -> float:
    import torch

    config = TrainConfig(steps=steps, n_envs=n_envs, eval_every=0, checkpoint_every=0)
    torch.set_num_threads(config.torch_threads)
    model = build_model(config, make_vec_env(config, samples), None)
    model.learn(config.n_steps * n_envs)  # warm-up: first rollout and update
    start = time.perf_counter()
    model.learn(steps, reset_num_timesteps=False)
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8192)
    parser.add_argument("--n-envs", type=int, default=4)
    parser.add_argument("--suite", default="synth-quick")
    args = parser.parse_args()
    samples = training_samples(args.suite, 8, seed=0)
    raw = raw_rate(samples, args.steps)
    train = training_rate(samples, args.steps, args.n_envs)
    print(f"{'':<44} {'steps/s':>10}")
    print(f"{'raw env (PacingFeatures, random legal)':<44} {raw:>10.0f}")
    print(f"{f'MaskablePPO training ({args.n_envs} envs)':<44} {train:>10.0f}")
    ratio = raw / train
    verdict = "met" if ratio <= 3 else "NOT met"
    print(f"raw / training = {ratio:.2f}x (target <= 3x): {verdict}")


if __name__ == "__main__":
    main()
