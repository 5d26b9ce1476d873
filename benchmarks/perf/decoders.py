"""The library's readers against each other: decord, PyAV, TorchCodec, on the same frames.

Run: ``python -m benchmarks.perf.decoders [--minutes 10] [--fps 10] [--repeats 3]``

One 720p H.264 test video is written once (cached in the work dir; frames carry their
index, so every read is checked exact). Two requests are timed on fresh readers (open
included, cache off):

- ``caption300``: FALCONEye's light-caption pattern, 30 uniform frames in each 60 s clip
  (300 frames for 10 minutes),
- ``uniform32``: 32 uniform frames over the whole video.

Each row prints the median seconds per decoder, the ratio to decord in the same run, and
whether every frame read was the one asked for. The target for making a decoder the
default: exact, and a ratio <= 1.0.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from video_env import Interval
from video_env.video import available_decoders, open_video, uniform_times, write_video
from video_env.video.testing import coded_frame, read_code

WIDTH, HEIGHT, BITS = 1280, 720, 16


def ensure_video(workdir: Path, minutes: float, fps: float) -> Path:
    """The cached test video (written on first use)."""
    path = workdir / f"decoders-{minutes:g}min-{fps:g}fps-720p.mp4"
    if not path.exists():
        n = round(minutes * 60 * fps)
        frames = (coded_frame(i, WIDTH, HEIGHT, bits=BITS) for i in range(n))
        tmp = path.with_suffix(".part.mp4")
        write_video(tmp, frames, fps, gop=max(1, round(fps * 2)))
        tmp.rename(path)
    return path


def caption_times(duration: float, clip: float = 60.0, per_clip: int = 30) -> np.ndarray:
    """``per_clip`` uniform frames in each ``clip``-second window (FALCONEye's captions)."""
    starts = np.arange(0.0, duration, clip)
    return np.concatenate(
        [uniform_times(Interval(s, min(duration, s + clip)), per_clip) for s in starts]
    )


def timed_read(path: Path, decoder: str, times: np.ndarray) -> tuple[float, np.ndarray]:
    """Seconds to open a fresh reader and read ``times``, and the frame codes read."""
    start = time.perf_counter()
    with open_video(path, decoder=decoder, cache_bytes=0) as video:
        frames = video.frames(times)
    seconds = time.perf_counter() - start
    return seconds, read_code(frames, bits=BITS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--fps", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "video-env")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = ensure_video(args.workdir, args.minutes, args.fps)
    decoders = available_decoders()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{path.name}: decoders {', '.join(decoders)}; load average {load:.2f}")
    with open_video(path, decoder="pyav") as video:
        duration, expected_fps = video.duration, video.fps
    cases = {
        f"caption{len(caption_times(duration))}": caption_times(duration),
        "uniform32": uniform_times(Interval(0, duration), 32),
    }
    print(f"{'case':<12} {'decoder':<11} {'median s':>9} {'/decord':>8}  exact")
    for case, times in cases.items():
        expected = np.round(times * expected_fps - 1e-9).astype(np.int64)
        samples: dict[str, list[float]] = {d: [] for d in decoders}
        exact = dict.fromkeys(decoders, True)
        for k in range(args.repeats):  # rotate the order, so that none always goes first
            order = decoders[k % len(decoders) :] + decoders[: k % len(decoders)]
            for decoder in order:
                seconds, codes = timed_read(path, decoder, times)
                samples[decoder].append(seconds)
                exact[decoder] = exact[decoder] and bool(np.array_equal(codes, expected))
        base = statistics.median(samples["decord"]) if "decord" in decoders else None
        for decoder in decoders:
            median = statistics.median(samples[decoder])
            ratio = f"{median / base:8.3f}" if base else "     n/a"
            print(f"{case:<12} {decoder:<11} {median:>9.3f} {ratio}  {exact[decoder]}")


if __name__ == "__main__":
    main()
