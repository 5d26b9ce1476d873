"""RemoteVideoEnv against a server that misbehaves: clear errors, no session opened behind."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("openenv")

from websockets.asyncio.server import ServerConnection, serve

from video_env.serving.client import RemoteSessionError, RemoteVideoEnv


def observation(**fields: Any) -> str:
    data = {"observation": {"observation": {}, **fields}, "reward": 0.0, "done": False}
    return json.dumps({"type": "observation", "data": data})


class FakeServer:
    """Speaks the protocol until its ``mode`` says otherwise (after the first reply)."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.connections = 0
        self.port = 0
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        ready.wait(10)

    def _run(self, ready: threading.Event) -> None:
        async def main() -> None:
            async with serve(self._handle, "127.0.0.1", 0) as server:
                self.port = server.sockets[0].getsockname()[1]
                self._stop: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                ready.set()
                await self._stop

        self._loop.run_until_complete(main())

    async def _handle(self, ws: ServerConnection) -> None:
        self.connections += 1
        async for message in ws:
            kind = json.loads(message)["type"]
            if kind == "reset" or self.mode in ("ok", "close-after-reply"):
                await ws.send(observation())
                if self.mode == "close-after-reply" and kind != "reset":
                    await ws.close(1001)
                    return
                continue
            if self.mode == "close":
                await ws.close(1011)
                return
            if self.mode == "garbage":
                await ws.send("}{ not json")
            elif self.mode == "not-an-object":
                await ws.send("[1, 2]")
            elif self.mode == "no-observation":
                await ws.send(json.dumps({"type": "observation", "data": {"x": 1}}))
            elif self.mode == "huge-frames":
                await ws.send(observation(frames_shape=[10**6, 10**5, 10**5, 3]))
            elif self.mode == "bad-image":
                await ws.send(
                    observation(frames=["data:image/png;base64,!!"], frames_shape=[1, 2, 2, 3])
                )
            elif self.mode == "error":
                await ws.send(json.dumps({"type": "error", "data": {"message": "no", "code": "X"}}))
            elif self.mode == "hang":
                await ws.wait_closed()  # never answers; done when the client gives up

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set_result, None)
        self._thread.join(timeout=10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    server = FakeServer()
    yield server
    server.close()


@pytest.mark.parametrize(
    "mode",
    ["close", "garbage", "not-an-object", "no-observation", "huge-frames", "bad-image", "hang"],
)
def test_a_lost_session_raises_and_does_not_reconnect(fake: FakeServer, mode: str) -> None:
    fake.mode = mode
    with RemoteVideoEnv(fake.url, message_timeout_s=0.5) as env:
        env.reset(options={"index": 0})
        before = fake.connections
        with pytest.raises(RemoteSessionError, match="the session is lost"):
            env.step("speed(2)")
        with pytest.raises(RemoteSessionError, match="reset starts a new one"):
            env.abandon("no_answer")  # no new, empty session in its place
        with pytest.raises(RemoteSessionError):
            env.state()
        assert fake.connections == before
        fake.mode = "ok"
        env.reset(options={"index": 0})  # a new session
        assert fake.connections == before + 1
        env.step("speed(2)")


def test_a_connection_closed_between_calls_is_not_replaced(fake: FakeServer) -> None:
    fake.mode = "close-after-reply"
    with RemoteVideoEnv(fake.url) as env:
        env.reset(options={"index": 0})
        env.step("speed(2)")  # answered, then the server closes
        before = fake.connections
        time.sleep(0.2)  # the close frame arrives
        with pytest.raises(RemoteSessionError, match="closed the connection"):
            env.step("speed(2)")
        assert fake.connections == before


def test_an_error_the_server_states_leaves_the_session(fake: FakeServer) -> None:
    fake.mode = "error"
    with RemoteVideoEnv(fake.url) as env:
        env.reset(options={"index": 0})
        with pytest.raises(RuntimeError, match="Server error: no") as raised:
            env.step("speed(2)")
        assert not isinstance(raised.value, RemoteSessionError)
        fake.mode = "ok"
        env.step("speed(2)")  # the same session goes on
