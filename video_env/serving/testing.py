"""A server on ``127.0.0.1`` for tests and benchmarks: in a thread, or in its own process.

:class:`LocalServer` runs :func:`~video_env.serving.server.make_app` under uvicorn in a
background thread on a free port; :class:`ServerProcess` runs ``video-env serve`` as a
child process (its memory is its own, for leak tests and throughput per server core).
Both bind the loopback interface only and stop when their ``with`` block ends.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from typing import Any

from video_env._closing import Closing
from video_env.serving.auth import TOKEN_ENV, auth_headers
from video_env.serving.server import DEFAULT_MAX_REQUEST_BYTES, make_app, uvicorn_config

__all__ = ["LocalServer", "ServerProcess", "get_json"]


def get_json(url: str, timeout: float = 10.0, token: str | None = None) -> Any:
    """GET a JSON document (with the server's bearer token, if any)."""
    request = urllib.request.Request(url, headers=auth_headers(token))
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return json.loads(reply.read())


class LocalServer(Closing):
    """:func:`make_app` served from a thread (use as a context manager).

    Args:
        env_id: The environment id.
        env_kwargs: Its arguments (any Python values: rules, samples...).
        **app_kwargs: Further :func:`make_app` arguments (``token=``: also sent by
            :meth:`sessions`).
    """

    def __init__(
        self, env_id: str, env_kwargs: dict[str, Any] | None = None, **app_kwargs: Any
    ) -> None:
        import uvicorn

        limit = app_kwargs.get("max_request_bytes", DEFAULT_MAX_REQUEST_BYTES)
        self.token: str | None = app_kwargs.get("token")
        self.app = make_app(env_id, env_kwargs, **app_kwargs)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.port = int(self._sock.getsockname()[1])
        self._server = uvicorn.Server(uvicorn_config(self.app, limit))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the local server did not start")
            time.sleep(0.02)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def sessions(self) -> dict[str, Any]:
        """The server's ``/sessions`` report."""
        report: dict[str, Any] = get_json(self.base_url + "/sessions", token=self.token)
        return report

    def close(self) -> None:
        """Stop serving."""
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()


class ServerProcess(Closing):
    """``video-env serve`` in a child process on a free loopback port.

    Args:
        args: Arguments after ``serve`` (the env id first; ``--port 0`` unless given).
        timeout_s: Seconds to wait for it to listen.
        token: The server's bearer token (passed in its environment, sent by
            :meth:`sessions`).

    Attributes:
        startup: What the server printed up to its address line.
    """

    def __init__(
        self, args: list[str], timeout_s: float = 60.0, *, token: str | None = None
    ) -> None:
        port = [] if "--port" in args else ["--port", "0"]
        command = [sys.executable, "-m", "video_env.cli", "serve", *args, *port]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop(TOKEN_ENV, None)
        if token:
            env[TOKEN_ENV] = token
        self.token = token
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        self.base_url = ""
        deadline = time.monotonic() + timeout_s
        assert self.process.stdout is not None
        lines = []
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if " on http://" in line:
                self.base_url = line.split(" on ", 1)[1].split()[0]
                break
        self.startup = "".join(lines)
        if not self.base_url:
            self.close()
            raise RuntimeError("the server process did not start:\n" + self.startup)
        self._drain = threading.Thread(target=self._read_rest, daemon=True)
        self._drain.start()
        while time.monotonic() < deadline:  # listening: the socket is bound before the print
            try:
                get_json(self.base_url + "/health", timeout=2)
                break
            except OSError:
                time.sleep(0.05)

    def _read_rest(self) -> None:
        assert self.process.stdout is not None
        for _ in self.process.stdout:
            pass

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self.process.pid

    def sessions(self) -> dict[str, Any]:
        """The server's ``/sessions`` report."""
        report: dict[str, Any] = get_json(self.base_url + "/sessions", token=self.token)
        return report

    def close(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL after 10 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
