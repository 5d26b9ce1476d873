"""Bad input over the wire: clear errors, the other sessions go on, nothing leaks."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from shared_fixtures import wait_for

pytest.importorskip("openenv")

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from video_env.serving.testing import LocalServer, ServerProcess

PACING = {"dataset": "synth-tiny"}


def ws_connect(base_url: str, query: str = "") -> ClientConnection:
    return connect(base_url.replace("http://", "ws://") + "/ws" + query, max_size=None)


def ask(ws: ClientConnection, message: Any) -> dict[str, Any]:
    ws.send(message if isinstance(message, str) else json.dumps(message))
    reply: dict[str, Any] = json.loads(ws.recv(timeout=30))
    return reply


def reset(ws: ClientConnection, **data: Any) -> dict[str, Any]:
    return ask(ws, {"type": "reset", "data": data})


def step(ws: ClientConnection, **action: Any) -> dict[str, Any]:
    return ask(ws, {"type": "step", "data": action})


def post(url: str, body: bytes) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def drop(ws: ClientConnection) -> None:
    """Vanish without a close frame (a killed client, a dropped network)."""
    ws.socket.shutdown(socket.SHUT_RDWR)
    ws.socket.close()


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer("VideoEnv/Pacing-v0", PACING, max_sessions=3, max_request_bytes=65536) as srv:
        yield srv


def test_malformed_messages_get_error_frames_and_the_session_goes_on(
    server: LocalServer,
) -> None:
    with ws_connect(server.base_url) as ws:
        assert ask(ws, "{not json")["data"]["code"] == "INVALID_JSON"
        assert ask(ws, {"type": "jump"})["data"]["code"] == "UNKNOWN_TYPE"
        early = step(ws, kind="speed", factor=2)
        assert early["data"]["code"] == "EXECUTION_ERROR"
        assert "send reset first" in early["data"]["message"]
        bad_index = reset(ws, index=99)
        assert "index" in bad_index["data"]["message"]
        assert "unknown sample_id" in reset(ws, sample_id="nope")["data"]["message"]
        assert reset(ws, index=0)["type"] == "observation"
        wrong_env = step(ws, kind="evaluate", windows=[[0, 1]])  # a Zoom action
        assert wrong_env["data"]["code"] == "VALIDATION_ERROR"
        assert step(ws, kind="speed", factor=2, colour="red")["data"]["code"] == "VALIDATION_ERROR"
        assert step(ws, kind="speed", factor="fast")["data"]["code"] == "VALIDATION_ERROR"
        refused = step(ws, kind="rewatch", chunk=40)  # well-typed, against the rules
        assert refused["type"] == "observation" and refused["data"]["reward"] == pytest.approx(-0.1)
        assert refused["data"]["observation"]["observation"]["last_action_error"]
        reversed_window = step(ws, kind="answer", answer="A", window=[9, 3])
        assert (
            "malformed action"
            in reversed_window["data"]["observation"]["observation"]["last_action_error"]
        )
        assert step(ws, kind="answer", answer="A")["data"]["done"] is True
        assert "send reset first" in step(ws, kind="speed", factor=1)["data"]["message"]


def test_http_errors_are_clear(server: LocalServer) -> None:
    url = server.base_url
    assert post(url + "/step", b"{nope")[0] == 422
    status, body = post(url + "/step", json.dumps({"action": {"kind": "query"}}).encode())
    assert status == 422 and "kind" in json.dumps(body)
    status, body = post(url + "/step", json.dumps({"action": {"kind": "speed"}}).encode())
    assert status == 400 and "reset" in body["detail"]  # stateless /step: no episode
    status, body = post(url + "/reset", json.dumps({"index": 99}).encode())
    assert status == 400 and "index" in body["detail"]
    assert post(url + "/step", b"x" * 70000)[0] == 413
    assert post(url + "/reset", b"{}")[0] == 200


def test_a_websocket_reset_is_checked_as_an_http_reset_is() -> None:
    huge = "e" * 500_000  # fits the default message size (1 MiB)
    with LocalServer("VideoEnv/Pacing-v0", PACING) as srv, ws_connect(srv.base_url) as ws:
        bad_resets = ({"episode_id": huge}, {"seed": -1}, {"seed": "soon"}, {"index": [0]},
                      {"index": True}, {"index": "3"}, {"indx": 2},
                      {"options": {"index": 2}})  # fmt: skip
        for bad in bad_resets:
            reply = reset(ws, **{"index": 0, **bad})
            assert reply["data"]["code"] == "VALIDATION_ERROR", reply
            assert len(json.dumps(reply)) < 2000  # the refused value is not echoed whole
            status, body = post(srv.base_url + "/reset", json.dumps(bad).encode())
            assert status == 422, body  # the same arguments over HTTP
        assert reset(ws, index=0, episode_id="mine")["type"] == "observation"
        state = ask(ws, {"type": "state"})
        assert state["data"]["episode_id"] == "mine"


def test_unknown_session_oversized_message_and_capacity(server: LocalServer) -> None:
    with ws_connect(server.base_url, "?session_id=no-such-session") as ws:
        reply = json.loads(ws.recv(timeout=30))
        assert reply["data"]["code"] == "SESSION_ERROR" and "Unknown session_id" in str(reply)
    with ws_connect(server.base_url) as other, ws_connect(server.base_url) as big:
        assert reset(other, index=0)["type"] == "observation"
        assert reset(big, index=1)["type"] == "observation"
        big.send(json.dumps({"type": "step", "data": {"kind": "text", "text": "x" * 70000}}))
        with pytest.raises(ConnectionClosed) as closed:
            big.recv(timeout=30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
        assert step(other, kind="speed", factor=1)["type"] == "observation"  # unaffected
        wait_for(lambda: server.sessions()["active"] == 1)  # the oversized one was freed
        extra = [ws_connect(server.base_url) for _ in range(2)]
        try:
            for ws in extra:
                assert reset(ws, index=0)["type"] == "observation"
            with ws_connect(server.base_url) as one_too_many:  # refused at once
                reply = json.loads(one_too_many.recv(timeout=30))
                assert reply["data"]["code"] == "CAPACITY_REACHED"
                assert reply["data"]["max_sessions"] == 3
            assert step(extra[0], kind="speed", factor=1)["type"] == "observation"
        finally:
            for ws in extra:
                ws.close()


def test_a_vanished_client_frees_its_session(server: LocalServer) -> None:
    wait_for(lambda: server.sessions()["active"] == 0)
    ws = ws_connect(server.base_url)
    reset(ws, index=0)
    step(ws, kind="speed", factor=2)
    assert server.sessions()["active"] == 1
    drop(ws)
    wait_for(lambda: server.sessions()["active"] == 0)
    with ws_connect(server.base_url) as again:
        assert reset(again, index=0)["type"] == "observation"


@pytest.mark.slow
def test_idle_sessions_expire_and_are_freed() -> None:
    """OpenEnv's reaper (every 5 s at least) closes sessions idle past the timeout."""
    with LocalServer("VideoEnv/Pacing-v0", PACING, session_timeout_s=0.5) as srv:
        idle = [ws_connect(srv.base_url) for _ in range(3)]
        for ws in idle:
            reset(ws, index=0)
        assert srv.sessions()["active"] == 3
        wait_for(lambda: srv.sessions()["active"] == 0, timeout=30)
        expired = step(idle[0], kind="speed", factor=1)
        assert "expired" in expired["data"]["message"]
        for ws in idle:
            ws.close()


@pytest.mark.slow
def test_200_abandoned_sessions_give_their_memory_back() -> None:
    """A server process; sessions that vanish mid-episode; its resident memory after."""
    args = ["VideoEnv/Pacing-v0", "--dataset", "synth-tiny", "--pixel-observations"]
    with ServerProcess([*args, "--session-timeout", "0", "--max-sessions", "64"]) as srv:

        def idle() -> int:
            wait_for(lambda: srv.sessions()["active"] == 0)
            rss: int = srv.sessions()["rss_bytes"]
            return rss

        def open_sessions(n: int) -> list[ClientConnection]:
            out = [ws_connect(srv.base_url) for _ in range(n)]
            for i, ws in enumerate(out):
                assert reset(ws, index=i % 2)["type"] == "observation"
            return out

        for ws in open_sessions(8):  # warm-up: imports, first allocations
            drop(ws)
        base = idle()
        held = open_sessions(32)
        live = srv.sessions()["rss_bytes"] - base  # what 32 live sessions take
        for ws in held:
            drop(ws)
        for _ in range(8):
            for ws in open_sessions(25):
                drop(ws)
        after = idle() - base
        report = srv.sessions()
        print(
            f"rss: base {base / 1e6:.0f} MB, 32 live +{live / 1e6:.0f} MB, "
            f"after 200 +{after / 1e6:.0f} MB"
        )
        assert report["created"] == report["closed"] == 8 + 32 + 200
        assert live > 32 * 5e6  # a live pixel session holds megabytes (frames, caches)
        assert after < live, (after, live)  # less than 32 sessions' worth stayed


@pytest.mark.slow
def test_two_server_processes_share_one_port() -> None:
    """``--reuse-port``: the kernel spreads sessions over both processes of one address."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = str(probe.getsockname()[1])
    probe.close()
    args = ["VideoEnv/Zoom-v0", "--dataset", "synth-tiny", "--port", port, "--reuse-port"]
    with ServerProcess(args) as first, ServerProcess(args) as second:
        assert first.base_url == second.base_url
        seen: set[int] = set()
        wait_for(lambda: seen.add(first.sessions()["pid"]) or len(seen) == 2, timeout=60)
        sessions = [ws_connect(first.base_url) for _ in range(16)]  # both listen now
        for ws in sessions:
            assert reset(ws, index=0)["type"] == "observation"
        active: dict[int, int] = {}
        for _ in range(60):  # each report comes from whichever process accepted it
            report = first.sessions()
            active[report["pid"]] = report["active"]
        assert set(active) == {first.pid, second.pid}
        assert sum(active.values()) == 16 and min(active.values()) > 0
        for ws in sessions:
            ws.close()


def test_half_a_surrogate_pair_in_a_reply_is_read_and_the_session_goes_on() -> None:
    """A reply cut mid-character (its JSON escapes half a pair): read as in process."""
    tools = {"dataset": "synth-tiny", "preset": "longvt"}
    with LocalServer("VideoEnv/Tools-v1", tools) as srv, ws_connect(srv.base_url) as ws:
        assert reset(ws, index=0)["type"] == "observation"
        reply = step(ws, kind="text", text="\ud800 <answer>B \udfff</answer>")
        assert reply["type"] == "observation", reply
        assert reply["data"]["done"] is True
        assert reset(ws, index=1)["type"] == "observation"  # the session is alive
