"""``video-env train``: learned policies.

Kinds: ``pacing`` (stable-baselines3), ``distill`` / ``tool-chats`` / ``sft`` / ``rl`` /
``trl`` (the VideoScout VLM).
"""

from __future__ import annotations

import argparse
import os

from policies.learned_pacing import ALGOS
from policies.training.pacing import TrainConfig
from video_env.cli.flags import Flags

DEFAULT_OUT = os.path.join("runs", "pacing")
#: ``train pacing``'s flags (``--sensors`` and ``--quiet`` are added by hand).
PACING_FLAGS = Flags(TrainConfig(), skip=("sensors", "progress_bar"), choices={"algo": ALGOS})


def _train_pacing(args: argparse.Namespace) -> int:
    from policies.training.pacing import train

    config = PACING_FLAGS.build(args, sensors=tuple(args.sensors), progress_bar=not args.quiet)
    out = args.out or os.path.join(DEFAULT_OUT, f"{args.algo}-{args.suite}-seed{args.seed}")
    result = train(config, out, tensorboard=not args.no_tensorboard)
    print(
        f"trained {result.env_steps} steps in {result.train_seconds:.0f} s wall, "
        f"{result.train_cpu_seconds:.0f} s CPU "
        f"({result.env_steps / max(result.train_seconds, 1e-9):.0f} steps/s); "
        f"policy: {result.model_path}"
    )
    print("perception: SIMULATED (synthetic world; not a model's result)")
    name = f"pacing-{args.algo}:{out}"
    print(f"run it: video-env bench --suite {args.suite} --envs pacing --policies {name}")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``train`` subcommand."""
    parser = subparsers.add_parser("train", help="train learned policies")
    kinds = parser.add_subparsers(dest="train_kind", metavar="KIND", required=True)
    pacing = kinds.add_parser(
        "pacing",
        help="train a stable-baselines3 pacing policy on synthetic videos",
        description="Train on new videos drawn like SUITE's, evaluate periodically on other new "
        "(validation) videos; SUITE's own videos stay unseen, the test set of `video-env bench "
        "--suite SUITE`. Writes policy.zip/policy.json (run it in `video-env bench` as "
        "pacing-ALGO:OUT), best/, checkpoints/, evaluations.jsonl and TensorBoard logs (tb/).",
    )
    PACING_FLAGS.add(pacing)
    pacing.add_argument("--sensors", nargs="+", default=list(TrainConfig().sensors),
                        choices=["vlm", "clip"], help="the sensors the policy reads")  # fmt: skip
    pacing.add_argument("--out", help=f"output folder (default: {DEFAULT_OUT}/ALGO-SUITE-seedN)")
    pacing.add_argument("--no-tensorboard", action="store_true")
    pacing.add_argument("--quiet", action="store_true", help="no progress bar")
    pacing.set_defaults(func=_train_pacing)
    from policies.training.cli import add_training_commands

    add_training_commands(kinds)
