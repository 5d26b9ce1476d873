"""The Zoom env's light captions with a real VLM: one by one against ``caption_batch``.

Run: ``python -m benchmarks.perf.zoom_captions [--model DIR] [--clips 8] [--suite synth-quick]``

FALCONEye's Zoom env captions every 60 s clip of a video before the first step (53 clips
for a synth-quick video), which dominates a Zoom bench with a real captioner. On the
first ``--clips`` clips of the suite's first video, at the env's own caption frames and
sizes (:class:`~video_env.envs.zoom_rules.ZoomRules`), this prints the seconds to render
(or decode) a clip's frames, the seconds per caption one by one (``caption``, the
baseline) and batched (``caption_batch``, what the env now calls), their ratio, and how
many captions agree. The model defaults to the shipped pixel VLM.
"""

from __future__ import annotations

import argparse
import time

from video_env.backends.base import FrameBatch
from video_env.backends.transformers_vlm import TransformersVLM
from video_env.envs.zoom_rules import ZoomRules
from video_env.synth import load_suite
from video_env.types import Interval
from video_env.video import open_video


def main() -> None:
    """Time the captions and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="a VLM folder (default: the pixel VLM)")
    parser.add_argument("--clips", type=int, default=8)
    parser.add_argument("--suite", default="synth-quick")
    args = parser.parse_args()
    if args.model is None:
        from video_env.pixel import PIXEL_VLM_DIR

        args.model = str(PIXEL_VLM_DIR)
    vlm = TransformersVLM(args.model, device="cpu")
    rules = ZoomRules()
    video = open_video(load_suite(args.suite)[0].video)
    clips = [Interval(60.0 * i, min(video.duration, 60.0 * (i + 1))) for i in range(args.clips)]

    def batches() -> list[FrameBatch]:
        out = [
            FrameBatch.sample(video, c, rules.caption_frames(c.length), rules.resize(c.length))
            for c in clips
        ]
        for batch in out:
            batch.pixels()
        return out

    start = time.monotonic()
    first = batches()
    render = (time.monotonic() - start) / len(clips)
    start = time.monotonic()
    one = [vlm.caption(b) for b in first]
    single = (time.monotonic() - start) / len(clips)
    start = time.monotonic()
    many = vlm.caption_batch(first)  # the frames are kept by the batches: not timed again
    batched = (time.monotonic() - start) / len(clips)
    same = sum(a == b for a, b in zip(one, many, strict=True))
    print(f"{len(clips)} clips of {len(first[0])} frames, fed at most {rules.resize(60.0)}")
    print(f"frames: {render:.2f} s per clip")
    print(f"caption one by one: {single:.2f} s per clip (baseline)")
    print(f"caption_batch (max_batch {vlm.max_batch}): {batched:.2f} s per clip")
    print(f"ratio batched / one by one: {batched / single:.2f}; same captions: {same}/{len(clips)}")


if __name__ == "__main__":
    main()
