"""Speed of the offline world: rendering, simulated VLM calls, and rendering's share.

Run: ``python -m benchmarks.perf.synth [--frames 300] [--workdir DIR]``

Prints frames rendered per second at 448x448 and 1204x672 (aspect kept), the same frames
decoded from the video exported to mp4 (the baseline: what a real decoded video costs),
simulated VLM calls per second, and the share of rendering in a VideoScout-like episode
that shows pixels to its policy (16 turns x 20 frames at 448 + one VLM call per turn).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from video_env import Interval, open_video
from video_env.backends import FrameBatch
from video_env.backends.simulated import SimulatedVLM
from video_env.synth import export_videos, generate_video, video_samples

SIZES = {"448x448": (448, 448), "1204x672": (1204, 672)}


def per_second(fn: object, count: int) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "video-env")
    args = parser.parse_args()
    video = generate_video("perf", seed=1, duration=600, n_needles=8)
    rng = np.random.default_rng(0)
    times = np.sort(rng.uniform(0, video.duration, args.frames))

    annotations = args.workdir / "perf-synth" / "annotations.jsonl"
    if not annotations.exists():
        export_videos([video], annotations.parent, fps=2.0, size=(1280, 720))
    exported = annotations.parent / "perf.mp4"
    decode_times = np.round(times * 2) / 2  # frames that exist in the 2 fps export

    print(f"{'case':<34} {'frames/s':>10}")
    render_fps, decode_fps = {}, {}
    for label, size in SIZES.items():
        video.close()  # cold caches
        render_fps[label] = per_second(lambda s=size: video.frames(times, size=s), len(times))
        with open_video(exported) as decoded:
            decode = per_second(lambda s=size: decoded.frames(decode_times, size=s), len(times))
        decode_fps[label] = decode
        print(f"{'render ' + label:<34} {render_fps[label]:>10.1f}")
        print(
            f"{'decode exported mp4 ' + label:<34} {decode:>10.1f}"
            f"   render/decode speed: {render_fps[label] / decode:.2f}x"
        )

    vlm = SimulatedVLM()
    sample = video_samples(video, ["mcq"])[0]
    batches = [
        FrameBatch.sample(video, Interval(float(t), float(t) + 45), 16, 448) for t in times[:200]
    ]

    def calls() -> None:
        for batch in batches:
            vlm.answer(batch, sample.question, sample.options)

    vlm_per_s = per_second(calls, len(batches))
    print(f"{'simulated VLM calls (16 frames)':<34} {vlm_per_s:>10.1f}")
    render_s = 16 * 20 / render_fps["448x448"]
    decode_s = 16 * 20 / decode_fps["448x448"]
    vlm_s = 16 / vlm_per_s
    print("episode of 16 turns x 20 frames at 448, one simulated VLM call per turn:")
    print(f"  simulated VLM calls: {vlm_s * 1e3:8.1f} ms (never need pixels)")
    print(f"  rendering, if the policy is shown pixels: {render_s * 1e3:8.1f} ms")
    print(f"  decoding the same frames from the mp4:    {decode_s * 1e3:8.1f} ms")
    print(
        f"  -> with pixel observations rendering is {render_s / (render_s + vlm_s):.0%} of the "
        f"perception time but {render_s / decode_s:.0%} of what decoding a real file costs; "
        "with timestamp-only observations nothing is rendered (0%)"
    )


if __name__ == "__main__":
    main()
