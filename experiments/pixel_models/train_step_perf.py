"""Seconds per training step of the pixel-real recipe on this machine, and its projected time.

Run: ``python -m experiments.pixel_models.train_step_perf [--steps 40] [--videos 20]``

The issue's budget (training ≤ 15 min on 2 cores) depends on the machine: machines of one
kind differ (docs/pixel_real.md). This renders the training samples of ``--videos``
training videos, runs ``--steps`` steps of the default
:class:`~experiments.pixel_models.train.Recipe` on one and on two torch threads, and
prints the seconds per step (a run of ``WARM_UP``
steps subtracted), the ratio one thread / two threads, and the full recipe's projected
time (rendering scaled to its 160 videos plus its steps at the faster thread count). A
1024×1024 float32 matrix product's GFLOP/s on two threads is printed beside them as the
machine's reference.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from experiments.pixel_models.data import RenderedSet, render_dataset
from experiments.pixel_models.train import Recipe, train_clip
from video_env.pixel.splits import split_videos

WARM_UP = 5


def matmul_gflops(threads: int = 2, repeats: int = 30) -> float:
    """GFLOP/s of a 1024×1024 float32 matrix product on ``threads`` torch threads."""
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    a @ b
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return repeats * 2 * 1024**3 / (time.perf_counter() - start) / 1e9


def seconds_per_step(data: RenderedSet, threads: int, steps: int) -> float:
    """Mean seconds of a recipe step on ``threads`` threads, set-up and warm-up left out.

    Times a run of ``WARM_UP`` steps and one of ``WARM_UP + steps`` steps; the difference
    over ``steps`` is the steady step time.
    """

    def run(n: int) -> float:
        start = time.perf_counter()
        train_clip(data, Recipe(steps=n, threads=threads), lambda _: None)
        return time.perf_counter() - start

    return (run(WARM_UP + steps) - run(WARM_UP)) / steps


def main(argv: Sequence[str] | None = None) -> int:
    """Print seconds per step on 1 and 2 threads and the projected recipe time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--videos", type=int, default=20)
    args = parser.parse_args(argv)
    default = Recipe()
    videos = split_videos("train", args.videos)
    start = time.perf_counter()
    data = render_dataset(videos, default.seed, default.per_needle)
    render_s = time.perf_counter() - start
    print(f"machine reference: {matmul_gflops():.0f} GFLOP/s (1024² float32 matmul, 2 threads)")
    per_step = {t: seconds_per_step(data, t, args.steps) for t in (1, 2)}
    for threads, seconds in per_step.items():
        print(f"{threads} thread(s): {seconds:.3f} s a step")
    print(f"one thread / two threads: {per_step[1] / per_step[2]:.2f}x")
    best = min(per_step.values())
    render_all = render_s * default.train_videos / args.videos
    projected = render_all + best * default.steps
    print(
        f"projected default recipe ({default.train_videos} videos, {default.steps} steps): "
        f"{projected / 60:.1f} min (rendering {render_all:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
