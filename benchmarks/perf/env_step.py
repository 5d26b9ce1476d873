"""Environment step throughput, against a trivial Gymnasium env in the same run.

Run: ``python -m benchmarks.perf.env_step [--steps 3000]``

1. Steps per second of each env with simulated perception and pixel observations off,
   beside a trivial env (fixed observation, no work) as the floor of Gymnasium overhead.
   Tools runs its ``falconeye`` preset (the Zoom env's evaluate as a tool: the same 20 s
   evaluate as the Zoom row) and its ``longvt`` preset (a 20 s ``crop_video``), each under
   its preset's own turn budget (46 and 5 turns), resetting when an episode ends.
2. With pixel observations on (Pacing), the env's time per step over the reader's raw
   time for the same frames (the rendering or decoding the step cannot avoid).

Targets: Pacing >= 2,000 steps/s with pixels off; pixel overhead <= 1.2x; Tools
(falconeye) within 2x of Zoom's steps per second.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from video_env.actions import EvaluateAction, QueryAction, SegmentQuery, SpeedAction
from video_env.envs import PacingEnv
from video_env.types import Interval
from video_env.video.resize import Resize


class TrivialEnv(gym.Env[Any, Any]):
    """The cheapest possible env: the floor of a step's cost."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(0.0, 1.0, (4,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        return np.zeros(4, np.float32), {}

    def step(self, action: int) -> Any:
        return np.zeros(4, np.float32), 0.0, False, False, {}


def steps_per_second(env: gym.Env[Any, Any], policy: Callable[[Any], Any], steps: int) -> float:
    """Run ``steps`` steps (resetting when an episode ends) and return steps per second."""
    obs, _ = env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        obs, _, terminated, truncated, _ = env.step(policy(obs))
        if terminated or truncated:
            obs, _ = env.reset()
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    args = parser.parse_args()
    rows: list[tuple[str, float]] = [
        ("trivial gymnasium env", steps_per_second(TrivialEnv(), lambda o: 0, args.steps))
    ]
    pacing = PacingEnv("synth-quick")
    rows.append(("Pacing (speed 2x, pixels off)", _pacing_rate(pacing, args.steps)))
    for name, rate in _other_envs(args.steps):
        rows.append((name, rate))
    floor = rows[0][1]
    print(f"{'env':<40} {'steps/s':>10} {'vs trivial':>11}")
    for name, rate in rows:
        print(f"{name:<40} {rate:>10.0f} {rate / floor:>11.4f}")
    print(f"Pacing target >= 2000 steps/s: {'met' if rows[1][1] >= 2000 else 'NOT met'}")
    rates = dict(rows)
    zoom, tools = rates.get(ZOOM_ROW), rates.get(TOOLS_ROW)
    if zoom and tools:
        verdict = "met" if tools >= zoom / 2 else "NOT met"
        print(f"Tools target >= Zoom / 2 steps/s: {verdict} ({tools / zoom:.2f}x Zoom)")
    _pixel_overhead(max(50, args.steps // 20))


ZOOM_ROW = "Zoom (one 20 s evaluate)"
TOOLS_ROW = "Tools falconeye (one 20 s evaluate)"


def _pacing_rate(env: PacingEnv, steps: int) -> float:
    env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        if env.pointer > len(env.chunks):
            env.reset()
        env.step(SpeedAction(2))
    return steps / (time.perf_counter() - start)


def _other_envs(steps: int) -> list[tuple[str, float]]:
    rows = []
    try:
        from video_env.envs.zoom import ZoomEnv
    except ImportError:  # pragma: no cover - env not built yet
        ZoomEnv = None  # type: ignore[assignment,misc]  # noqa: N806
    if ZoomEnv is not None:
        env = ZoomEnv("synth-quick", budget=10**9)
        env.reset(seed=0)
        duration = env.video.duration
        rng = np.random.default_rng(0)

        def evaluate(_: Any) -> Any:
            start = float(rng.uniform(0, duration - 20))
            return EvaluateAction((Interval(start, start + 20),))

        rows.append((ZOOM_ROW, steps_per_second(env, evaluate, steps)))
    try:
        from video_env.envs.clip_query import ClipQueryEnv
    except ImportError:  # pragma: no cover
        ClipQueryEnv = None  # type: ignore[assignment,misc]  # noqa: N806
    if ClipQueryEnv is not None:
        from video_env.backends import LexicalEmbedder
        from video_env.backends.simulated import SimulatedCaptioner, SimulatedCLIP
        from video_env.envs import Perception

        perception = Perception(
            None, SimulatedCaptioner(), SimulatedCLIP(embedder=LexicalEmbedder())
        )
        clip_env = ClipQueryEnv(
            "synth-quick",
            perception=perception,
            max_rounds=10**6,
            max_frames=1000,
            max_segments=1001,
        )

        def query(_: Any) -> Any:
            return QueryAction((SegmentQuery(1, "a clock on the wall"),))

        rows.append(
            ("ClipQuery (one query, lexical CLIP)", steps_per_second(clip_env, query, steps // 4))
        )
    rows.extend(_tools_rows(steps))
    return rows


def _tools_rows(steps: int) -> list[tuple[str, float]]:
    """The Tools env: falconeye's evaluate (Zoom's action) and LongVT's crop_video."""
    try:
        from video_env.envs.tools import ToolsEnv
    except ImportError:  # pragma: no cover
        return []
    from video_env.actions.types import ToolCall

    rows = []
    for row, preset, tool, (start_arg, end_arg) in (
        (TOOLS_ROW, "falconeye", "evaluate", ("start", "end")),
        ("Tools longvt (one 20 s crop_video)", "longvt", "crop_video", ("start_time", "end_time")),
    ):
        env = ToolsEnv("synth-quick", preset=preset)
        env.reset(seed=0)
        duration = env.video.duration
        rng = np.random.default_rng(0)

        def call(
            _: Any,
            tool: str = tool,
            a: str = start_arg,
            b: str = end_arg,
            rng: np.random.Generator = rng,
            duration: float = duration,
        ) -> Any:
            start = float(rng.uniform(0, duration - 20))
            return ToolCall(tool, {a: start, b: start + 20})

        rows.append((row, steps_per_second(env, call, steps)))
    return rows


def _pixel_overhead(steps: int) -> None:
    env = PacingEnv("synth-quick", pixel_observations=True)
    env.reset(seed=0)
    env_s = raw_s = 0.0
    for _ in range(steps):
        if env.pointer > len(env.chunks):
            env.reset()
        start = time.perf_counter()
        env.step(SpeedAction(2))
        env_s += time.perf_counter() - start
        size = env.turn_spec.size
        start = time.perf_counter()
        env.video.frames(env.batch.times, size=Resize.exact(size.width, size.height))
        raw_s += time.perf_counter() - start
    print(
        f"Pacing with pixels: {env_s / steps * 1e3:.2f} ms/step, raw frames "
        f"{raw_s / steps * 1e3:.2f} ms -> overhead {env_s / raw_s:.3f}x (target <= 1.2x)"
    )


if __name__ == "__main__":
    main()
