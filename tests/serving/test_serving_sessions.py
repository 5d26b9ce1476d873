"""Whose a session is, what counts against the cap, the token: against a live server."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from shared_fixtures import wait_for

pytest.importorskip("openenv")

from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from video_env.actions.types import SpeedAction
from video_env.errors import ConfigError
from video_env.serving.auth import (
    TOKEN_ENV,
    exposure_warning,
    is_loopback,
    resolve_token,
    token_matches,
)
from video_env.serving.client import RemoteAuthError, RemoteVideoEnv
from video_env.serving.testing import LocalServer, ServerProcess, get_json

PACING = {"dataset": "synth-tiny"}


def ws_connect(server: LocalServer, query: str = "", **kwargs: Any) -> ClientConnection:
    url = server.base_url.replace("http://", "ws://") + "/ws" + query
    return connect(url, max_size=None, **kwargs)


def ask(ws: ClientConnection, message: Any) -> dict[str, Any]:
    ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))
    reply: dict[str, Any] = json.loads(ws.recv(timeout=30))
    return reply


def rpc(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params, "id": 1}


def post(url: str, body: Any, token: str | None = None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def http_session(server: LocalServer) -> dict[str, Any]:
    reply: dict[str, Any] = post(server.base_url + "/mcp", rpc("openenv/session/create"))[1]
    return reply


def close_by_id(server: LocalServer, session_id: str) -> dict[str, Any]:
    rpc_close = rpc("openenv/session/close", session_id=session_id)
    reply: dict[str, Any] = post(server.base_url + "/mcp", rpc_close)[1]
    return reply


def own_id(ws: ClientConnection) -> str:
    """The id of the session a WebSocket holds (OpenEnv tells its owner)."""
    reply = ask(ws, {"type": "mcp", "data": rpc("openenv/session/create")})
    return str(reply["data"]["result"]["session_id"])


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer("VideoEnv/Pacing-v1", PACING, max_sessions=4, session_timeout_s=None) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _no_token_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)


def test_http_sessions_count_and_cannot_fill_the_server(server: LocalServer) -> None:
    made = http_session(server)
    assert "session_id" in made["result"]
    report = server.sessions()
    assert report["sessions"] == 1 and report["unclaimed"] == 1 and report["active"] == 0
    refused = http_session(server)  # a quarter of 4: one may wait
    assert "wait for their WebSocket" in refused["error"]["message"]
    held = [ws_connect(server) for _ in range(3)]
    try:
        for ws in held:
            assert ask(ws, {"type": "reset", "data": {"index": 0}})["type"] == "observation"
        assert server.sessions()["sessions"] == 4
        with ws_connect(server) as one_too_many:
            assert json.loads(one_too_many.recv(timeout=30))["data"]["code"] == "CAPACITY_REACHED"
    finally:
        for ws in held:
            ws.close()
    closed = close_by_id(server, made["result"]["session_id"])  # its holder gives it back
    assert closed["result"]["closed"] is True
    wait_for(lambda: server.sessions()["sessions"] == 0)


def test_unclaimed_http_sessions_expire_without_a_session_timeout() -> None:
    with LocalServer(
        "VideoEnv/Pacing-v1",
        PACING,
        max_sessions=4,
        session_timeout_s=None,
        unclaimed_timeout_s=0.3,
        max_unclaimed=4,
    ) as srv:
        ids = [http_session(srv)["result"]["session_id"] for _ in range(4)]
        assert srv.sessions()["sessions"] == 4
        wait_for(lambda: srv.sessions()["sessions"] == 0, timeout=10)
        with ws_connect(srv, f"?session_id={ids[0]}") as late:
            assert "Unknown session_id" in json.loads(late.recv(timeout=30))["data"]["message"]
        with ws_connect(srv) as ws:  # a WebSocket session, idle: not reaped
            assert ask(ws, {"type": "reset", "data": {"index": 0}})["type"] == "observation"
            time.sleep(1.0)
            assert (
                ask(ws, {"type": "step", "data": {"kind": "speed", "factor": 1}})["type"]
                == "observation"
            )


def test_an_http_session_belongs_to_the_first_websocket_that_claims_it(
    server: LocalServer,
) -> None:
    session_id = http_session(server)["result"]["session_id"]
    with ws_connect(server, f"?session_id={session_id}") as owner:
        assert ask(owner, {"type": "reset", "data": {"index": 0}})["type"] == "observation"
        assert server.sessions()["unclaimed"] == 0
        with ws_connect(server, f"?session_id={session_id}") as second:
            reply = json.loads(second.recv(timeout=30))
            assert reply["data"]["code"] == "SESSION_ERROR"
            assert "Unknown session_id" in reply["data"]["message"]
        assert "Unknown session_id" in close_by_id(server, session_id)["error"]["message"]
        step = ask(owner, {"type": "step", "data": {"kind": "speed", "factor": 2}})
        assert step["type"] == "observation"
    wait_for(lambda: server.sessions()["sessions"] == 0)  # it ended with its connection


def test_a_websocket_session_is_its_connection_s_alone(server: LocalServer) -> None:
    with ws_connect(server) as owner, ws_connect(server) as other:
        assert ask(owner, {"type": "reset", "data": {"index": 1}})["type"] == "observation"
        session_id = own_id(owner)
        # attach by id: refused, as if the session did not exist
        with ws_connect(server, f"?session_id={session_id}") as thief:
            assert "Unknown session_id" in json.loads(thief.recv(timeout=30))["data"]["message"]
        # close by id: over HTTP, from another /ws session, from an /mcp WebSocket
        assert "Unknown session_id" in close_by_id(server, session_id)["error"]["message"]
        rpc_close = rpc("openenv/session/close", session_id=session_id)
        reply = ask(other, {"type": "mcp", "data": rpc_close})
        assert "Unknown session_id" in reply["data"]["error"]["message"]
        mcp_url = server.base_url.replace("http://", "ws://") + "/mcp"
        with connect(mcp_url) as mcp:
            reply = ask(mcp, rpc_close)
            assert "Unknown session_id" in reply["error"]["message"]
        # the owner's episode went on untouched
        step = ask(owner, {"type": "step", "data": {"kind": "speed", "factor": 2}})
        assert step["type"] == "observation"
        state = ask(owner, {"type": "state"})["data"]
        assert state["turn"] == 1 and not state["expired"]


def test_stateless_reset_shares_the_cap_and_stateless_step_builds_nothing() -> None:
    with LocalServer("VideoEnv/Pacing-v1", PACING, max_sessions=1) as srv:
        url = srv.base_url
        assert post(url + "/reset", {"index": 0})[0] == 200
        built = srv.sessions()["created"]
        status, body = post(url + "/step", {"action": {"kind": "speed", "factor": 2}})
        assert status == 400 and "reset" in body["detail"]
        assert srv.sessions()["created"] == built  # refused before building an env
        with ws_connect(srv) as ws:
            assert ask(ws, {"type": "reset", "data": {"index": 0}})["type"] == "observation"
            status, body = post(url + "/reset", {"index": 0})
            assert status == 503 and body["code"] == "CAPACITY_REACHED"
        wait_for(lambda: srv.sessions()["sessions"] == 0)
        assert post(url + "/reset", {"index": 0})[0] == 200


def test_concurrent_stateless_resets_stay_under_the_cap() -> None:
    pixels = {**PACING, "pixel_observations": True}
    with LocalServer("VideoEnv/Pacing-v1", pixels, max_sessions=2) as srv:
        codes: list[int] = []
        peak = [0]  # environments alive at once (each stateless reset builds one)
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], srv.sessions()["active"])

        def reset() -> None:
            codes.append(post(srv.base_url + "/reset", {"index": 0})[0])

        watcher = threading.Thread(target=watch)
        watcher.start()
        threads = [threading.Thread(target=reset) for _ in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        stop.set()
        watcher.join()
        assert set(codes) <= {200, 503} and 200 in codes and len(codes) == 12
        assert peak[0] <= 2
        assert srv.sessions()["sessions"] == 0


def test_a_message_that_is_not_an_object_leaves_the_session_going(server: LocalServer) -> None:
    with ws_connect(server) as ws:
        assert ask(ws, {"type": "reset", "data": {"index": 0}})["type"] == "observation"
        for message in ("[1, 2]", "5", '"step"', "null", b"\xff\xfe"):
            reply = ask(ws, message)
            assert reply["type"] == "error" and reply["data"]["code"] == "VALIDATION_ERROR"
        assert ask(ws, "{not json")["data"]["code"] == "INVALID_JSON"
        binary = json.dumps({"type": "step", "data": {"kind": "speed", "factor": 2}}).encode()
        assert ask(ws, binary)["type"] == "observation"  # JSON in a binary frame: read
        assert ask(ws, {"type": "state"})["data"]["turn"] == 1


def test_a_token_guards_every_route_but_health(monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalServer("VideoEnv/Zoom-v1", PACING, max_sessions=2, token="s3cret") as srv:
        url = srv.base_url
        assert get_json(url + "/health")["status"] == "healthy"
        with pytest.raises(urllib.error.HTTPError) as refused:
            get_json(url + "/sessions")
        assert refused.value.code == 401
        with pytest.raises(urllib.error.HTTPError):
            get_json(url + "/sessions", token="wrong")
        assert srv.sessions()["sessions"] == 0  # sends its token
        assert post(url + "/mcp", rpc("openenv/session/create"))[0] == 401
        assert post(url + "/reset", {"index": 0})[0] == 401
        assert post(url + "/reset", {"index": 0}, token="s3cret")[0] == 200
        with pytest.raises(InvalidStatus) as ws_refused:
            ws_connect(srv)
        assert ws_refused.value.response.status_code == 403
        with pytest.raises(ConnectionError):
            RemoteVideoEnv(url, "ZoomEnv").reset(options={"index": 0})
        with RemoteVideoEnv(url, "ZoomEnv", token="s3cret") as env:
            obs, _ = env.reset(options={"index": 0})
        monkeypatch.setenv(TOKEN_ENV, "s3cret")
        with RemoteVideoEnv(url, "ZoomEnv") as env:  # the variable
            env.reset(options={"index": 0})
        assert srv.sessions()["created"] == 3


def test_a_refused_token_says_the_server_wants_one_and_how_to_pass_it() -> None:
    with LocalServer("VideoEnv/Zoom-v1", PACING, max_sessions=2, token="s3cret") as srv:
        for token, told in ((None, "it sent none"), ("wrong", "not the server's")):
            with RemoteVideoEnv(srv.base_url, "ZoomEnv", token=token) as env:
                with pytest.raises(RemoteAuthError) as refused:
                    env.reset(options={"index": 0})
                with pytest.raises(RemoteAuthError, match="step: the server at"):
                    env.step("zoom([0, 1])")  # no session was opened: the same advice
            message = str(refused.value)
            assert "HTTP 403" in message and "wants the token" in message and told in message
            assert "token=..." in message and TOKEN_ENV in message
            assert "reset starts a new one" not in message and srv.base_url in message
        assert srv.sessions()["created"] == 0


def test_token_and_exposure_helpers() -> None:
    assert token_matches(b"Bearer abc", "abc") and token_matches(b"bearer abc", "abc")
    assert not token_matches(b"Bearer abd", "abc") and not token_matches(None, "abc")
    assert not token_matches(b"Basic abc", "abc")
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    assert exposure_warning("127.0.0.1", None) is None
    assert exposure_warning("0.0.0.0", "s3cret") is None
    warning = exposure_warning("0.0.0.0", None)
    assert warning is not None and "--token" in warning and TOKEN_ENV in warning


@pytest.mark.parametrize("token", [" s3cret", "s3cret\n", "sécret", "s3\x00cret"])
def test_a_token_no_client_could_send_is_refused(
    token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="printable ASCII"):
        resolve_token(token)
    if "\x00" not in token:  # an environment variable cannot hold a NUL
        monkeypatch.setenv(TOKEN_ENV, token)
        with pytest.raises(ConfigError, match="printable ASCII"):
            resolve_token(None)
    monkeypatch.setenv(TOKEN_ENV, "s3cret")
    assert resolve_token(None) == "s3cret" and resolve_token("other") == "other"


@pytest.mark.slow
def test_serve_warns_when_exposed_without_a_token_and_takes_the_variable() -> None:
    args = ["VideoEnv/Zoom-v1", "--dataset", "synth-tiny", "--host", "0.0.0.0"]
    with ServerProcess(args) as exposed:
        assert "warning: serving on 0.0.0.0 without a token" in exposed.startup
    with ServerProcess(args, token="s3cret") as guarded:
        assert "warning" not in guarded.startup and "token required" in guarded.startup
        assert guarded.sessions()["sessions"] == 0
        with pytest.raises(urllib.error.HTTPError):
            get_json(guarded.base_url + "/sessions")


def test_remote_env_works_as_before(server: LocalServer) -> None:
    with RemoteVideoEnv(server.base_url) as env:
        env.reset(options={"index": 0})
        _, _, terminated, truncated, _ = env.step(SpeedAction(2))
        assert not (terminated or truncated)
    wait_for(lambda: server.sessions()["sessions"] == 0)
