"""Server-bound throughput with ``--concurrency`` and the speed-up of a repeated episode.

Run: ``python -m benchmarks.perf.concurrency [--episodes 64] [--latency 0.1]``

1. Against the local fake OpenAI server (in its own process, so that its CPU does not
   share this process's GIL) answering every request after a fixed latency (100 ms by
   default), episodes per second of the ``blind-llm`` policy (one LLM call
   per episode, as a server-bound agent) with the thread executor at ``--concurrency 16``
   against the serial executor, on the same jobs in the same process (target >= 12x:
   latency-bound, ideally 16x).
2. A ClipQuery episode (reset, three retrieval queries, answer) with a real (tiny,
   random) OpenCLIP, first with an empty disk cache and then repeated by a fresh backend
   (as a second run or policy would): wall time of each and the speed-up from the cache
   (every frame's feature a cache hit). With a larger CLIP the saving grows with the
   model's forward time.
3. Likewise a Zoom episode (captions of every 60 s clip, three evaluations, answer) on the
   tiny random Qwen2.5-VL through ``qwen2.5-vl:PATH`` (when ``TransformersVLM`` is there).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from benchmarks.config import BenchConfig
from benchmarks.run import run_benchmark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--episodes", type=int, default=576,
        help="episodes per executor (enough to amortise each thread's one-time worker set-up)",
    )  # fmt: skip
    parser.add_argument("--latency", type=float, default=0.1, help="server latency (s)")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    _concurrency(args.episodes, args.latency, args.concurrency)
    _repeated_episode()
    _repeated_zoom_episode()


_SERVER = """
import sys
from video_env.backends.llm.testing import FakeOpenAIServer, chat_reply
reply = chat_reply('{"answer": "A", "window": [0, 10]}', delay_s=float(sys.argv[1]))
with FakeOpenAIServer(default=reply) as server:
    print(server.base_url, flush=True)
    sys.stdin.read()
    print(len(server.requests), flush=True)
"""


@contextlib.contextmanager
def _server(latency: float) -> Iterator[tuple[str, list[int]]]:
    """The fake server in a child process: (base URL, [requests served] after exit)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    served: list[int] = []
    try:
        yield proc.stdout.readline().strip(), served
    finally:
        proc.stdin.close()
        served.append(int(proc.stdout.readline() or 0))
        proc.wait(timeout=30)


def _concurrency(episodes: int, latency: float, concurrency: int) -> None:
    with _server(latency) as (url, served), tempfile.TemporaryDirectory() as tmp:
        os.environ["VIDEO_ENV_LLM_BASE_URL"] = url
        os.environ["VIDEO_ENV_LLM_API_KEY"] = "sk-fake"
        seeds = tuple(range(max(1, episodes // 12)))
        config = BenchConfig(
            suite="synth-tiny",
            envs=("zoom",),
            policies=("blind-llm",),
            llm="openai:fake",
            seeds=seeds,
        )
        n_jobs = 12 * len(seeds)
        timings: dict[str, float] = {}
        cpu_s: dict[str, float] = {}
        # Warm-up (imports, samples, the first env) outside the timings.
        run_benchmark(config, Path(tmp) / "warm", executor="serial", plots=False)
        for name, executor, workers in (
            ("serial", "serial", 1),
            (f"--concurrency {concurrency}", "thread", concurrency),
        ):
            out = Path(tmp) / name.replace(" ", "_")
            start, cpu = time.perf_counter(), time.process_time()
            run_benchmark(config, out, executor=executor, workers=workers, plots=False)
            timings[name] = time.perf_counter() - start
            cpu_s[name] = time.process_time() - cpu
    calls = served[0]
    serial, threaded = timings["serial"], timings[f"--concurrency {concurrency}"]
    print(f"{n_jobs} blind-llm episodes on zoom, fake server latency {latency * 1e3:.0f} ms "
          f"({calls} requests in all)")  # fmt: skip
    for name, wall in timings.items():
        print(f"{name:<24} {n_jobs / wall:8.2f} episodes/s  "
              f"(this process's CPU: {cpu_s[name] / n_jobs * 1e3:.1f} ms/episode)")  # fmt: skip
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"speed-up: {serial / threaded:.1f}x (target >= 12x; ideal {concurrency}x when the "
          f"CPU per episode is far below the latency); load average {load} on "
          f"{os.cpu_count()} cores")  # fmt: skip


def _repeated_episode() -> None:
    from video_env.actions.types import AnswerAction, QueryAction, SegmentQuery
    from video_env.backends.openclip import OpenCLIP
    from video_env.backends.simulated import SimulatedCaptioner
    from video_env.backends.testing_clip import tiny_open_clip
    from video_env.cache import DiskCache
    from video_env.envs.clip_query import ClipQueryEnv
    from video_env.envs.perception import Perception
    from video_env.synth import load_suite

    samples = load_suite("synth-tiny")
    with tempfile.TemporaryDirectory() as tmp:
        model = str(tiny_open_clip(Path(tmp) / "clip"))
        cache = DiskCache(Path(tmp) / "cache")

        def episode() -> int:
            clip = OpenCLIP(model, cache=cache)  # a fresh backend: nothing in memory
            env = ClipQueryEnv(
                samples, perception=Perception(captioner=SimulatedCaptioner(), clip=clip)
            )
            env.reset(seed=0, options={"index": 0})
            for segment in (1, 3, 5):
                env.step(QueryAction((SegmentQuery(segment, "a sign with a word"),)))
            env.step(AnswerAction("A"))
            return clip.computed_frames

        OpenCLIP(model, cache=None).text_features(["load the model"])
        computed: list[int] = []
        cold = _time(lambda: computed.append(episode()))
        warm = min(_time(lambda: computed.append(episode())) for _ in range(3))
    print(f"ClipQuery episode with tiny OpenCLIP: first {cold * 1e3:.1f} ms "
          f"({computed[0]} features computed), repeated {warm * 1e3:.1f} ms "
          f"({computed[-1]} computed): {cold / warm:.1f}x from the disk cache")  # fmt: skip


def _repeated_zoom_episode() -> None:
    """A Zoom episode on the tiny Qwen2.5-VL (captions + evaluations through the cache)."""
    import importlib
    import importlib.util

    if importlib.util.find_spec("video_env.backends.transformers_vlm") is None:
        print("Zoom episode with tiny Qwen2.5-VL: skipped (no TransformersVLM in this version)")
        return
    from video_env.actions.types import AnswerAction, EvaluateAction
    from video_env.backends.registry import make_backend
    from video_env.cache import CachedCaptioner, CachedVLM
    from video_env.envs.perception import Perception
    from video_env.envs.zoom import ZoomEnv
    from video_env.synth import load_suite
    from video_env.types import Interval

    samples = load_suite("synth-tiny")
    previous = os.environ.get("VIDEO_ENV_CACHE_DIR")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["VIDEO_ENV_CACHE_DIR"] = str(Path(tmp) / "cache")  # an empty cache
        testing = importlib.import_module("video_env.backends.testing")
        spec = f"qwen2.5-vl:{testing.tiny_qwen2_5_vl(Path(tmp) / 'qwen')}"

        def episode() -> int:
            vlm, captioner = make_backend("vlm", spec), make_backend("captioner", spec)
            assert isinstance(vlm, CachedVLM) and isinstance(captioner, CachedCaptioner)
            env = ZoomEnv(samples, perception=Perception(vlm=vlm, captioner=captioner))
            env.reset(seed=0, options={"index": 0})
            env.step(EvaluateAction((Interval(0, 60), Interval(60, 80), Interval(80, 85))))
            env.step(AnswerAction("A", Interval(60, 80)))
            return vlm.misses + captioner.misses

        make_backend("vlm", spec)  # load the model outside the timings
        cold_misses: list[int] = []
        cold = _time(lambda: cold_misses.append(episode()))
        warm_misses: list[int] = []
        warm = min(_time(lambda: warm_misses.append(episode())) for _ in range(3))
    if previous is None:
        del os.environ["VIDEO_ENV_CACHE_DIR"]
    else:
        os.environ["VIDEO_ENV_CACHE_DIR"] = previous
    print(f"Zoom episode with tiny Qwen2.5-VL: first {cold * 1e3:.1f} ms ({cold_misses[0]} "
          f"model calls), repeated {warm * 1e3:.1f} ms ({warm_misses[-1]} model calls): "
          f"{cold / warm:.1f}x from the disk cache")  # fmt: skip


def _time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
