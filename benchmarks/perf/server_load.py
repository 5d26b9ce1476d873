"""A server under hostile load while a healthy client steps: its latency, the server's memory.

Run: ``python -m benchmarks.perf.server_load [--load-s 40] [--max-sessions 16]``

``video-env serve VideoEnv/Pacing-v1 --pixel-observations --session-timeout 0`` runs in a
child process (frames travel: each live session holds megabytes). One healthy client, in
a process of its own so the load generator's CPU does not delay its clock, plays Pacing
episodes over a WebSocket (2x until it must answer, then a new episode) and times each
step from send to reply. Three phases:

1. **alone**: the healthy client only.
2. **under load**, while it goes on stepping:

   - ``--drop-clients`` (200) WebSocket clients that connect and vanish without a close
     frame, ``--drop-at-once`` at a time; every other one sends a reset first (the
     server builds a pixel environment for it) and drops before reading the reply;
   - ``--slow-clients`` (8) slow clients: a half that never read their pixel replies
     (their TCP windows fill), a quarter that send a WebSocket frame one byte a second,
     a quarter that send HTTP request headers one byte a second;
   - HTTP ``openenv/session/create`` ``--http-creates`` times a second, never claimed;
   - ``--resets`` concurrent stateless ``POST /reset`` every 10 s (each builds an
     environment while it runs).

3. **after**: the load stopped and its sessions gone; the healthy client again, and a
   new client opening a session.

Printed: for each phase the healthy client's steps, step latency p50/p99/max and errors,
and the server's resident memory (``/proc``, sampled every 0.2 s: mean and peak); what
the load got (sessions opened, refused, HTTP sessions made and refused, resets served
and refused); the server's ``/sessions`` at its fullest and at the end. The machine's
CPUs are shared by the server, the healthy client and the load generator.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import struct
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

ENV_ID = "VideoEnv/Pacing-v1"
DATASET = "synth-quick"


def ws_url(base_url: str) -> str:
    return base_url.replace("http://", "ws://") + "/ws"


# -- the healthy client (its own process) ---------------------------------------------


def healthy_client(base_url: str, stop: Any, ready: Any, out: Any) -> None:
    """Step Pacing episodes until ``stop``; put ``[(time, latency_s, ok)]`` on ``out``."""
    from websockets.sync.client import connect

    records: list[tuple[float, float, bool]] = []

    def ask(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
        ws.send(json.dumps(message))
        reply: dict[str, Any] = json.loads(ws.recv(timeout=120))
        return reply

    with connect(ws_url(base_url), max_size=None, compression=None) as ws:
        reply = ask(ws, {"type": "reset", "data": {}})
        ready.set()
        while not stop.is_set():
            legal = reply["data"]["observation"]["info"].get("legal_actions", [])
            action = {"kind": "speed", "factor": 2} if "speed" in legal else {
                "kind": "answer", "answer": "A"}  # fmt: skip
            start = time.perf_counter()
            reply = ask(ws, {"type": "step", "data": action})
            ok = reply.get("type") == "observation"
            records.append((time.time(), time.perf_counter() - start, ok))
            if not ok or reply["data"]["done"]:
                reply = ask(ws, {"type": "reset", "data": {}})
    out.put(records)


# -- the load ---------------------------------------------------------------------------


def post(url: str, body: dict[str, Any], timeout: float = 120.0) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except OSError:
        return 0, None


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return json.loads(reply.read())


class Load:
    """The hostile clients of phase 2 (one asyncio loop) and what they got."""

    def __init__(self, base_url: str, args: argparse.Namespace) -> None:
        self.base_url = base_url
        self.args = args
        self.stats: Counter[str] = Counter()
        self.stop = asyncio.Event()
        self.pool = ThreadPoolExecutor(max_workers=args.resets + 8)

    async def run(self) -> None:
        tasks = [
            asyncio.create_task(self.connect_and_drop()),
            asyncio.create_task(self.http_sessions()),
            asyncio.create_task(self.stateless_resets()),
        ]
        n = self.args.slow_clients
        readers, dribblers = n // 2, n - n // 2
        slow = [self.slow_reader() for _ in range(readers)]
        slow += [self.ws_dribbler() for _ in range(dribblers // 2)]
        slow += [self.http_dribbler() for _ in range(dribblers - dribblers // 2)]
        tasks += [asyncio.create_task(c) for c in slow]
        await asyncio.sleep(self.args.load_s)
        self.stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.pool.shutdown(wait=True)

    async def connect_and_drop(self) -> None:
        from websockets.asyncio.client import connect

        gate = asyncio.Semaphore(self.args.drop_at_once)
        spacing = self.args.load_s * 0.8 / max(self.args.drop_clients, 1)

        async def one(i: int) -> None:
            async with gate:
                try:
                    ws = await connect(
                        ws_url(self.base_url), max_size=None, compression=None, open_timeout=30
                    )
                except Exception:
                    self.stats["drop: connect failed"] += 1
                    return
                try:  # a refusal comes at once
                    first = json.loads(await asyncio.wait_for(ws.recv(), 0.05))
                    code = first.get("data", {}).get("code", first.get("type"))
                    self.stats[f"drop: refused, {code}"] += 1
                except asyncio.TimeoutError:  # a session: maybe a reset, then vanish
                    try:
                        if i % 2 == 0:
                            await ws.send(json.dumps({"type": "reset", "data": {}}))
                        self.stats["drop: opened" + (", reset sent" if i % 2 == 0 else "")] += 1
                    except Exception as exc:
                        self.stats[f"drop: {type(exc).__name__}"] += 1
                except Exception as exc:
                    self.stats[f"drop: {type(exc).__name__}"] += 1
                finally:
                    ws.transport.abort()  # vanish: no close frame

        starts = []
        for i in range(self.args.drop_clients):
            starts.append(asyncio.create_task(one(i)))
            await asyncio.sleep(spacing)
        await asyncio.gather(*starts)

    async def slow_reader(self) -> None:
        """A session whose pixel replies are never read: its TCP window fills."""
        from websockets.asyncio.client import connect

        ws = await connect(ws_url(self.base_url), max_size=None, compression=None, max_queue=1)
        self.stats["slow: reader"] += 1
        try:
            await ws.send(json.dumps({"type": "reset", "data": {}}))
            for _ in range(6):
                await ws.send(json.dumps({"type": "step", "data": {"kind": "rewatch", "chunk": 0}}))
            await self.stop.wait()
        finally:
            ws.transport.abort()

    async def ws_dribbler(self) -> None:
        """A session that sends one masked 1000-byte frame a byte a second."""
        from websockets.asyncio.client import connect

        ws = await connect(ws_url(self.base_url), max_size=None, compression=None)
        self.stats["slow: ws dribbler"] += 1
        try:
            payload = json.dumps({"type": "state", "pad": "x" * 960}).encode()[:1000]
            payload = payload.ljust(1000, b" ")
            mask = os.urandom(4)
            masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            frame = b"\x81\xfe" + struct.pack("!H", len(payload)) + mask + masked
            for byte in frame:
                if self.stop.is_set():
                    break
                ws.transport.write(bytes([byte]))
                await asyncio.sleep(1.0)
        finally:
            ws.transport.abort()

    async def http_dribbler(self) -> None:
        """An HTTP request whose headers come a byte a second."""
        host, port = self.base_url.removeprefix("http://").split(":")
        _, writer = await asyncio.open_connection(host, int(port))
        self.stats["slow: http dribbler"] += 1
        try:
            writer.write(b"POST /reset HTTP/1.1\r\nHost: x\r\n")
            for byte in b"Content-Type: application/json\r\nX-Slow: " + b"y" * 200:
                if self.stop.is_set():
                    break
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(1.0)
        finally:
            writer.transport.abort()

    async def http_sessions(self) -> None:
        loop = asyncio.get_running_loop()
        body = {"jsonrpc": "2.0", "method": "openenv/session/create", "params": {}, "id": 1}
        while not self.stop.is_set():
            _, reply = await loop.run_in_executor(
                self.pool, post, self.base_url + "/mcp", body, 30.0
            )
            made = isinstance(reply, dict) and "result" in reply
            self.stats["http session: " + ("made" if made else "refused")] += 1
            await asyncio.sleep(1.0 / self.args.http_creates)

    async def stateless_resets(self) -> None:
        loop = asyncio.get_running_loop()
        while not self.stop.is_set():
            calls = [
                loop.run_in_executor(self.pool, post, self.base_url + "/reset", {})
                for _ in range(self.args.resets)
            ]
            for status, _ in await asyncio.gather(*calls):
                self.stats[f"stateless /reset: {status or 'failed'}"] += 1
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.stop.wait(), 10.0)


# -- measuring --------------------------------------------------------------------------


class Sampler:
    """The server's resident memory every 0.2 s, and its fullest ``/sessions``."""

    def __init__(self, base_url: str, pid: int) -> None:
        self.base_url = base_url
        self.pid = pid
        self.rss: list[tuple[float, int]] = []
        self.fullest: dict[str, int] = {}
        self.done = False

    def rss_now(self) -> int:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def run(self) -> None:
        last_report = 0.0
        while not self.done:
            self.rss.append((time.time(), self.rss_now()))
            if time.monotonic() - last_report > 1.0:
                last_report = time.monotonic()
                try:
                    report = get_json(self.base_url + "/sessions")
                except OSError:
                    report = {}
                for key in ("sessions", "unclaimed", "active", "stateless_resets"):
                    if key in report:
                        self.fullest[key] = max(self.fullest.get(key, 0), int(report[key]))
            time.sleep(0.2)

    def between(self, start: float, end: float) -> list[int]:
        return [rss for t, rss in self.rss if start <= t <= end]


def phase_row(name: str, records: list[Any], rss: list[int], start: float, end: float) -> str:
    mine = [(lat, ok) for t, lat, ok in records if start <= t <= end]
    lat = np.array([x for x, _ in mine]) * 1000 if mine else np.zeros(1)
    errors = sum(not ok for _, ok in mine)
    p50, p99 = np.percentile(lat, [50, 99])
    mean_mb = np.mean(rss) / 1e6 if rss else 0.0
    peak_mb = max(rss) / 1e6 if rss else 0.0
    return (f"{name:<12} {end - start:>6.0f} {len(mine):>6} {p50:>7.0f} {p99:>7.0f} "
            f"{lat.max():>7.0f} {errors:>6} {mean_mb:>9.0f} {peak_mb:>9.0f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alone-s", type=float, default=8.0, help="phases 1 and 3 (s)")
    parser.add_argument("--load-s", type=float, default=40.0, help="phase 2 (s)")
    parser.add_argument("--max-sessions", type=int, default=16)
    parser.add_argument("--drop-clients", type=int, default=200)
    parser.add_argument("--drop-at-once", type=int, default=16)
    parser.add_argument("--slow-clients", type=int, default=8)
    parser.add_argument("--http-creates", type=float, default=10.0, help="per second")
    parser.add_argument("--resets", type=int, default=30, help="concurrent, every 10 s")
    args = parser.parse_args()

    from video_env.serving.testing import ServerProcess

    serve_args = [ENV_ID, "--dataset", DATASET, "--pixel-observations",
                  "--max-sessions", str(args.max_sessions), "--session-timeout", "0"]  # fmt: skip
    print(f"machine: {os.cpu_count()} CPUs; server: video-env serve {' '.join(serve_args)}")
    print(f"load: {args.drop_clients} connect-and-drop clients ({args.drop_at_once} at once), "
          f"{args.slow_clients} slow clients, HTTP session/create {args.http_creates:g}/s, "
          f"{args.resets} concurrent stateless /reset every 10 s")  # fmt: skip
    context = multiprocessing.get_context("spawn")
    with ServerProcess(serve_args) as server:
        sampler = Sampler(server.base_url, server.pid)
        sampling = threading.Thread(target=sampler.run, daemon=True)
        sampling.start()
        stop, ready, out = context.Event(), context.Event(), context.Queue()
        client = context.Process(
            target=healthy_client, args=(server.base_url, stop, ready, out), daemon=True
        )
        client.start()
        if not ready.wait(120):
            raise RuntimeError("the healthy client did not start")
        t0 = time.time()
        time.sleep(args.alone_s)
        t1 = time.time()
        load = Load(server.base_url, args)
        asyncio.run(load.run())
        t2 = time.time()
        drained = time.monotonic()
        while time.monotonic() - drained < 60:  # the load's sessions gone (tickets: 30 s)
            report = server.sessions()
            if report.get("sessions", report["active"]) <= 1 and report.get("unclaimed", 0) == 0:
                break
            time.sleep(0.5)
        drain_s = time.monotonic() - drained
        t3 = time.time()
        time.sleep(args.alone_s)
        t4 = time.time()
        start = time.perf_counter()
        from websockets.sync.client import connect

        with connect(ws_url(server.base_url), max_size=None, compression=None) as ws:
            ws.send(json.dumps({"type": "reset", "data": {}}))
            newcomer = json.loads(ws.recv(timeout=60))
        newcomer_ms = (time.perf_counter() - start) * 1000
        stop.set()
        records = out.get(timeout=120)
        client.join(timeout=30)
        final = server.sessions()
        sampler.done = True
        sampling.join(timeout=5)

    print(f"{'phase':<12} {'secs':>6} {'steps':>6} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
          f"{'errors':>6} {'RSS MB':>9} {'peak MB':>9}")  # fmt: skip
    for name, a, b in (("alone", t0, t1), ("under load", t1, t2), ("after", t3, t4)):
        print(phase_row(name, records, sampler.between(a, b), a, b))
    print("what the load got:")
    for key, count in sorted(load.stats.items()):
        print(f"  {key}: {count}")
    print(f"server /sessions at its fullest: {sampler.fullest} (max_sessions {args.max_sessions})")
    print(
        f"load's sessions gone {drain_s:.1f} s after it stopped; at the end: "
        + ", ".join(f"{k} {final[k]}" for k in ("sessions", "unclaimed", "active") if k in final)
    )
    print(f"a new client after the load: {newcomer.get('type')} in {newcomer_ms:.0f} ms")


if __name__ == "__main__":
    main()
