"""Library frame reading against raw ``decord.VideoReader.get_batch`` on the same frames.

Run: ``python -m benchmarks.perf.decode [--repeats 5] [--workdir DIR]``

Two test videos are written once (cached in the work dir): 60 minutes at 1 fps and
2 minutes at 30 fps, 640x360 H.264. For each video three requests are timed:

- ``uniform32``: 32 uniform frames over the whole video (cold: fresh readers),
- ``chunk20``: 20 uniform frames inside a 45 s chunk (cold),
- ``cache-hit``: the ``uniform32`` request again on the same reader (library cache vs.
  raw decord, which decodes again).

Each row prints the median seconds of both and the ratio library/raw. Targets: cold
ratios <= 1.10, cache hits >= 20x faster than the raw read. The library's three readers
(TorchCodec, decord, PyAV) against each other: ``python -m benchmarks.perf.decoders``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from video_env import Interval
from video_env.video import open_video, uniform_times, write_video
from video_env.video.testing import coded_frame

VIDEOS = {"60min@1fps": (3600, 1.0), "2min@30fps": (3600, 30.0)}
WIDTH, HEIGHT = 640, 360


def textured_frames(n: int) -> Iterator[np.ndarray]:
    """Coded frames with a moving texture so the encoder has real work to do."""
    yy, xx = np.mgrid[0:HEIGHT, 0:WIDTH]
    for i in range(n):
        frame = coded_frame(i, WIDTH, HEIGHT, bits=16)
        wave = (40 * np.sin((xx + 3 * i) / 9.0) * np.cos((yy - 2 * i) / 13.0)).astype(np.int16)
        frame[HEIGHT // 2 :] = np.clip(frame[HEIGHT // 2 :] + wave[HEIGHT // 2 :, :, None], 0, 255)
        yield frame


def ensure_video(workdir: Path, name: str) -> Path:
    n, fps = VIDEOS[name]
    path = workdir / f"perf-{name.replace('@', '-')}.mp4"
    if not path.exists():
        tmp = path.with_suffix(".part.mp4")
        write_video(tmp, textured_frames(n), fps, gop=250 if fps > 1 else 10)
        tmp.rename(path)
    return path


def median_time(fn: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def cold(path: Path, times: np.ndarray, repeats: int) -> tuple[float, float]:
    """Median seconds of a first read on fresh readers: (library, raw decord)."""
    import decord

    lib_s: list[float] = []
    raw_s: list[float] = []

    def library() -> None:
        reader = open_video(path, decoder="decord")
        start = time.perf_counter()
        reader.frames(times)
        lib_s.append(time.perf_counter() - start)
        reader.close()

    def raw() -> None:
        raw_reader = decord.VideoReader(str(path))
        start = time.perf_counter()
        raw_reader.get_batch(indices).asnumpy()
        raw_s.append(time.perf_counter() - start)

    with open_video(path, decoder="decord") as probe:
        indices = probe.indices(times).tolist()  # type: ignore[attr-defined]
    for k in range(repeats):  # alternate who goes first, so neither gets a warmer start
        first, second = (library, raw) if k % 2 == 0 else (raw, library)
        first()
        second()
    return statistics.median(lib_s), statistics.median(raw_s)


def cache_hit(path: Path, times: np.ndarray, repeats: int) -> tuple[float, float]:
    import decord

    reader = open_video(path, decoder="decord")
    reader.frames(times)
    indices = reader.indices(times).tolist()  # type: ignore[attr-defined]
    lib = median_time(lambda: reader.frames(times), repeats)
    raw_reader = decord.VideoReader(str(path))
    raw = median_time(lambda: raw_reader.get_batch(indices).asnumpy(), repeats)
    return lib, raw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "video-env")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"{'video':<12} {'case':<10} {'library s':>10} {'raw s':>10} {'lib/raw':>8}  target")
    for name in VIDEOS:
        path = ensure_video(args.workdir, name)
        with open_video(path) as video:
            duration = video.duration
        whole = uniform_times(Interval(0, duration), 32)
        chunk_start = duration * 0.37
        chunk = uniform_times(Interval(chunk_start, min(duration, chunk_start + 45)), 20)
        rows = [
            ("uniform32", *cold(path, whole, args.repeats), "<= 1.10"),
            ("chunk20", *cold(path, chunk, args.repeats), "<= 1.10"),
            ("cache-hit", *cache_hit(path, whole, args.repeats), "<= 0.05 (20x)"),
        ]
        for case, lib, raw, target in rows:
            print(f"{name:<12} {case:<10} {lib:>10.4f} {raw:>10.4f} {lib / raw:>8.3f}  {target}")


if __name__ == "__main__":
    main()
