"""Remote sessions against one server process versus the same envs in-process.

Run: ``python -m benchmarks.perf.remote_envs [--seconds 4] [--sessions 1,16,64]``

For Pacing with pixel observations (the paper's rules: up to 20 frames of 448 px a step,
JPEG on the wire) and Zoom (simulated perception), in the same run:

1. **in-process**: one process steps ``n`` envs in turn; steps per second of wall time
   and per CPU-second of that process.
2. **remote**: ``video-env serve`` in a child process, ``n`` WebSocket sessions driven at
   once by one asyncio client in this process (raw JSON, frames not decoded: the client's
   own cost is not the server's); steps per second, per CPU-second of the server process
   (``/proc``), the ratio of the two per-core rates, bytes a step on the wire (both ways),
   and the server's resident memory per live session. The server runs every session's env
   calls on one worker thread (its default); the last row of each env is the same server
   with ``--thread-per-session`` (OpenEnv's default: a worker thread per session).

The policy is the same in both: Pacing goes on at 2x while ``speed`` is legal, then
answers; Zoom evaluates the first half of the video twice, then answers. The machine's
load average is printed before and after: on a shared machine the wall-clock rates move
with it, the per-CPU-second rates much less. Target: with 64 sessions the server's steps
per CPU-second >= 0.8x the in-process rate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

import video_env  # noqa: F401  (registers the ids)
from video_env.actions.types import AnswerAction, EvaluateAction, SpeedAction
from video_env.serving.testing import ServerProcess
from video_env.types import Interval

DATASET = "synth-quick"
CASES: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "Pacing, pixels (jpeg)": (
        "VideoEnv/Pacing-v0",
        {"dataset": DATASET, "pixel_observations": True},
        ["--pixel-observations"],
    ),
    "Zoom": ("VideoEnv/Zoom-v0", {"dataset": DATASET}, []),
}


@dataclass
class Rate:
    """One measurement."""

    steps: int
    wall_s: float
    cpu_s: float
    bytes: int = 0
    rss_per_session: float = 0.0

    @property
    def per_s(self) -> float:
        return self.steps / self.wall_s

    @property
    def per_cpu_s(self) -> float:
        return self.steps / max(self.cpu_s, 1e-9)


def policy(env_id: str, legal: list[str], turn: int, duration: float) -> dict[str, Any]:
    """The wire action of the benchmark's fixed policy."""
    if env_id.endswith("Pacing-v0"):
        if "speed" in legal:
            return {"kind": "speed", "factor": 2}
        return {"kind": "answer", "answer": "A"}
    if "evaluate" in legal and turn < 2:
        return {"kind": "evaluate", "windows": [[0.0, duration / 2]]}
    return {"kind": "answer", "answer": "A"}


def env_action(action: dict[str, Any]) -> Any:
    """The same action as a dataclass, for the in-process env."""
    if action["kind"] == "speed":
        return SpeedAction(action["factor"])
    if action["kind"] == "evaluate":
        return EvaluateAction(tuple(Interval(*w) for w in action["windows"]))
    return AnswerAction(action["answer"])


def in_process(env_id: str, kwargs: dict[str, Any], n: int, seconds: float) -> Rate:
    envs = [gym.make(env_id, disable_env_checker=True, **kwargs).unwrapped for _ in range(n)]
    state = []
    for i, env in enumerate(envs):
        obs, info = env.reset(seed=i)
        state.append((obs, info))
    steps, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        for i, env in enumerate(envs):
            obs, info = state[i]
            duration = float(obs.get("duration", [0.0])[0]) if "duration" in obs else 0.0
            action = policy(env_id, info["legal_actions"], int(obs["turn"][0]) - 1, duration)
            obs, _, terminated, truncated, info = env.step(env_action(action))
            if terminated or truncated:
                obs, info = env.reset()
            state[i] = (obs, info)
            steps += 1
    return Rate(steps, time.perf_counter() - start, time.process_time() - cpu)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _drive(url: str, env_id: str, n: int, seconds: float, pid: int) -> Rate:
    from websockets.asyncio.client import connect

    counts = {"steps": 0, "bytes": 0}
    measuring = asyncio.Event()
    ready = 0
    all_ready = asyncio.Event()
    stop = asyncio.Event()

    async def ask(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(message)
        await ws.send(text)
        raw = await ws.recv()
        if measuring.is_set():
            counts["bytes"] += len(text) + len(raw)
        reply: dict[str, Any] = json.loads(raw)
        if reply.get("type") == "error":
            raise RuntimeError(str(reply["data"]))
        return reply["data"]  # type: ignore[no-any-return]

    async def session(i: int) -> None:
        nonlocal ready
        async with connect(url.replace("http://", "ws://") + "/ws", max_size=None) as ws:
            data = await ask(ws, {"type": "reset", "data": {"seed": i}})
            ready += 1
            if ready == n:
                all_ready.set()
            await all_ready.wait()
            while not stop.is_set():
                obs = data["observation"]
                inner = obs["observation"]
                duration = float(inner.get("duration", {"__ndarray__": [0.0]})["__ndarray__"][0])
                turn = int(inner["turn"]["__ndarray__"][0]) - 1
                action = policy(env_id, obs["info"].get("legal_actions", []), turn, duration)
                data = await ask(ws, {"type": "step", "data": action})
                if measuring.is_set():
                    counts["steps"] += 1
                if data["done"]:
                    data = await ask(ws, {"type": "reset", "data": {}})

    tasks = [asyncio.create_task(session(i)) for i in range(n)]
    waiter = asyncio.create_task(all_ready.wait())
    await asyncio.wait([waiter, *tasks], timeout=300, return_when=asyncio.FIRST_COMPLETED)
    for task in tasks:
        if task.done():  # a session failed before the measurement
            task.result()
    if not all_ready.is_set():
        raise RuntimeError("the sessions did not start within 300 s")
    await asyncio.sleep(0.5)  # every session stepping
    cpu, start = cpu_seconds(pid), time.perf_counter()
    measuring.set()
    await asyncio.sleep(seconds)
    measuring.clear()
    rate = Rate(counts["steps"], time.perf_counter() - start, cpu_seconds(pid) - cpu)
    rate.bytes = counts["bytes"]
    stop.set()
    await asyncio.gather(*tasks)
    return rate


def remote(env_id: str, flags: list[str], n: int, seconds: float) -> Rate:
    args = [env_id, "--dataset", DATASET, *flags, "--max-sessions", str(max(n, 1))]
    with ServerProcess([*args, "--session-timeout", "0"]) as server:
        rate = asyncio.run(_drive(server.base_url, env_id, n, seconds, server.pid))
        # memory of n live sessions (one reset each) over the idle server, warmed up
        deadline = time.monotonic() + 30
        while server.sessions()["active"] and time.monotonic() < deadline:
            time.sleep(0.05)
        idle = server.sessions()["rss_bytes"]
        live = asyncio.run(_hold(server, n))
        rate.rss_per_session = (live - idle) / n
    return rate


async def _hold(server: ServerProcess, n: int) -> int:
    from websockets.asyncio.client import connect

    url = server.base_url.replace("http://", "ws://") + "/ws"
    sockets = [await connect(url, max_size=None) for _ in range(n)]
    for i, ws in enumerate(sockets):
        await ws.send(json.dumps({"type": "reset", "data": {"seed": i}}))
        await ws.recv()
    rss: int = server.sessions()["rss_bytes"]
    for ws in sockets:
        await ws.close()
    return rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="timed seconds a row")
    parser.add_argument("--sessions", default="1,16,64", help="concurrent sessions")
    args = parser.parse_args()
    counts = [int(x) for x in args.sessions.split(",")]
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    header = (
        f"{'env':<22} {'sessions':>8} {'where':<10} {'steps/s':>8} {'steps/cpu-s':>11} "
        f"{'vs in-proc':>10} {'KB/step':>8} {'MB/session':>10}"
    )
    print(header)
    verdicts = []
    for name, (env_id, kwargs, flags) in CASES.items():
        base = in_process(env_id, kwargs, counts[-1], args.seconds)
        print(f"{name:<22} {counts[-1]:>8} {'in-proc':<10} {base.per_s:>8.1f} "
              f"{base.per_cpu_s:>11.1f} {1.0:>10.2f} {'-':>8} {'-':>10}")  # fmt: skip
        runs: list[tuple[int, str, list[str]]] = [(n, "remote", []) for n in counts] + [
            (counts[-1], "thread/ses", ["--thread-per-session"])
        ]
        for n, where, extra in runs:
            rate = remote(env_id, [*flags, *extra], n, args.seconds)
            ratio = rate.per_cpu_s / base.per_cpu_s
            kb = rate.bytes / max(rate.steps, 1) / 1024
            print(f"{name:<22} {n:>8} {where:<10} {rate.per_s:>8.1f} {rate.per_cpu_s:>11.1f} "
                  f"{ratio:>10.2f} {kb:>8.1f} {rate.rss_per_session / 1e6:>10.1f}")  # fmt: skip
            if n == counts[-1]:
                verdicts.append((f"{name}, {where}", ratio))
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for name, ratio in verdicts:
        met = "met" if ratio >= 0.8 else "NOT met"
        print(f"{name}: {counts[-1]} sessions at {ratio:.2f}x in-process per CPU-second "
              f"(target >= 0.8x): {met}")  # fmt: skip


if __name__ == "__main__":
    main()
