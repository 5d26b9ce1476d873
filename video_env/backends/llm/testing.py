"""A fake OpenAI-compatible chat server on the loopback interface, for tests.

:class:`FakeOpenAIServer` answers ``POST /v1/chat/completions`` with scripted replies
(normal completions, HTTP errors, slow replies, invalid bodies) and records every
request, so clients can be tested for retries, timeouts and what they send, offline.
It binds ``127.0.0.1`` on a free port and never talks to another host.
"""

from __future__ import annotations

import base64
import json
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from video_env._closing import Closing

__all__ = [
    "FakeOpenAIServer",
    "FakeReply",
    "RecordedRequest",
    "chat_reply",
    "error_reply",
    "request_images",
]


@dataclass(frozen=True)
class FakeReply:
    """One scripted HTTP reply.

    Attributes:
        status: HTTP status code.
        body: A JSON-able object (sent as JSON) or a string (sent as is).
        content_type: The ``Content-Type`` header.
        delay_s: Seconds to wait before replying (to provoke client timeouts).
        echo_headers: Append the request's headers (``Authorization`` included) to the
            body, as a careless server or proxy does in its error messages.
    """

    status: int = 200
    body: Any = None
    content_type: str = "application/json"
    delay_s: float = 0.0
    echo_headers: bool = False


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received: path, headers (lower-case names) and JSON body."""

    path: str
    headers: dict[str, str]
    body: Any


def chat_reply(
    text: str,
    *,
    model: str = "fake-model",
    prompt_tokens: int | None = 11,
    completion_tokens: int | None = 7,
    logprobs: Sequence[float] | None = None,
    finish_reason: str = "stop",
    delay_s: float = 0.0,
    tokens: Sequence[str] | None = None,
    top_logprobs: Sequence[Sequence[tuple[str, float]]] | None = None,
) -> FakeReply:
    """A successful chat completion; ``prompt_tokens=None`` leaves out ``usage``.

    ``logprobs`` gives each generated token's log-probability; ``tokens`` their texts
    (``t0``, ``t1``... if None) and ``top_logprobs`` each token's ``(text, logprob)``
    alternatives, as OpenAI's API returns them.
    """
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "finish_reason": finish_reason,
        "logprobs": None,
    }
    if logprobs is not None:
        names = list(tokens) if tokens is not None else [f"t{i}" for i in range(len(logprobs))]
        tops = list(top_logprobs) if top_logprobs is not None else [[] for _ in logprobs]
        content: list[dict[str, Any]] = [
            {
                "token": name,
                "logprob": lp,
                "bytes": None,
                "top_logprobs": [
                    {"token": t, "logprob": v, "bytes": None} for t, v in alternatives
                ],
            }
            for name, lp, alternatives in zip(names, logprobs, tops, strict=True)
        ]
        choice["logprobs"] = {"content": content}
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [choice],
    }
    if prompt_tokens is not None:
        completion = completion_tokens or 0
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion,
        }
    return FakeReply(body=body, delay_s=delay_s)


def error_reply(
    status: int, message: str = "scripted error", echo_headers: bool = False
) -> FakeReply:
    """An HTTP error with an OpenAI-style error body.

    With ``echo_headers`` its message quotes the request's headers.
    """
    return FakeReply(
        status=status,
        body={"error": {"message": message, "type": "fake"}},
        echo_headers=echo_headers,
    )


def _with_headers(body: Any, headers: dict[str, str]) -> str:
    """``body`` as sent, the request's headers added to its error message (or its text)."""
    quoted = "; ".join(f"{name}: {value}" for name, value in headers.items())
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = {**body["error"], "message": f"{body['error'].get('message', '')} ({quoted})"}
        return json.dumps({**body, "error": error})
    return f"{body if isinstance(body, str) else json.dumps(body)} ({quoted})"


def request_images(request: RecordedRequest) -> list[tuple[str, bytes]]:
    """The images of a recorded chat request: ``(media type, decoded bytes)`` per data URL.

    Raises:
        ValueError: If an image part is not a base64 ``data:`` URL.
    """
    images: list[tuple[str, bytes]] = []
    for message in (request.body or {}).get("messages", []):
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if part.get("type") != "image_url":
                continue
            url = str(part["image_url"]["url"])
            head, sep, data = url.partition(",")
            if not (sep and head.startswith("data:") and head.endswith(";base64")):
                raise ValueError(f"not a base64 data URL: {url[:40]!r}")
            images.append((head[5:-7], base64.b64decode(data, validate=True)))
    return images


@dataclass
class _State:
    replies: deque[FakeReply]
    default: FakeReply
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        state = self.server.state
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        with state.lock:
            state.requests.append(RecordedRequest(self.path, headers, body))
            reply = state.replies.popleft() if state.replies else state.default
        if reply.delay_s and state.closing.wait(reply.delay_s):
            return
        payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
        if reply.echo_headers:
            payload = _with_headers(reply.body, headers)
        data = payload.encode()
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (timeout) and closed the connection
            pass

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: _State) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


class FakeOpenAIServer(Closing):
    """A scripted OpenAI-compatible server on ``127.0.0.1`` (use as a context manager).

    Args:
        replies: Replies to play in order, one per request.
        default: The reply once the script is used up (``chat_reply("ok")`` if None).
    """

    def __init__(self, replies: Iterable[FakeReply] = (), default: FakeReply | None = None) -> None:
        self._state = _State(deque(replies), default or chat_reply("ok"))
        self._server = _Server(self._state)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """The requests received so far (a copy)."""
        with self._state.lock:
            return list(self._state.requests)

    def script(self, *replies: FakeReply) -> None:
        """Queue more replies."""
        with self._state.lock:
            self._state.replies.extend(replies)

    def close(self) -> None:
        """Stop serving; slow replies still pending are dropped."""
        self._state.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
