"""The ASGI middleware in front of the server: who is asking, may they, what they hold.

:class:`Guard` runs each request as its :class:`~video_env.serving.sessions.Connection`
(so that :class:`~video_env.serving.sessions.OwnedSessions` knows whose it is), checks
the bearer token, holds a stateless ``/reset``'s slot, ends a WebSocket's sessions when it
closes, and keeps a ``/ws`` session going through a message that is not a JSON object.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from openenv.core.env_server.exceptions import SessionCapacityError

from video_env.actions.reply_text import clean_text
from video_env.serving.auth import token_matches
from video_env.serving.sessions import Connection, VideoEnvServer, running_as, stop_running_as

__all__ = ["Guard"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Guard:
    """ASGI middleware: who is asking, may they, and what their connection holds.

    - With a ``token``, a request without ``Authorization: Bearer <token>`` gets HTTP 401
      (a WebSocket is refused before it opens: HTTP 403); ``/health`` stays open.
    - Each request runs as its :class:`~video_env.serving.sessions.Connection`
      (:func:`~video_env.serving.sessions.current_connection`); when a WebSocket closes,
      the sessions it holds end.
    - A stateless ``POST /reset`` runs in a slot of the server's (HTTP 503 with
      ``CAPACITY_REACHED`` when there is none).
    - On ``/ws``, a text message that is JSON but not an object, or a binary message that
      is not UTF-8, gets an error frame and the session goes on (OpenEnv would end it);
      binary UTF-8 messages are read as text.
    """

    def __init__(self, app: ASGIApp, server: VideoEnvServer, token: str | None = None) -> None:
        self.app = app
        self.server = server
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the request as its connection (see the class docstring)."""
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if self.token and path != "/health":
            header = dict(scope.get("headers") or []).get(b"authorization")
            if not token_matches(header, self.token):
                await _refuse(kind, receive, send)
                return
        connection = Connection(kind, path)
        reset_token = running_as(connection)
        try:
            if kind == "websocket":
                try:
                    wrapped = _objects_only(receive, send) if path == "/ws" else receive
                    await self.app(scope, wrapped, send)
                finally:
                    await self.server.end_sessions_of(connection)
            elif path == "/reset" and scope.get("method") == "POST":
                try:
                    slot = self.server.reserve_stateless()
                except SessionCapacityError as exc:
                    await _json_reply(send, 503, {"detail": str(exc), "code": "CAPACITY_REACHED"})
                    return
                try:
                    await self.app(scope, receive, send)
                finally:
                    self.server.release_stateless(slot)
            else:
                await self.app(scope, receive, send)
        finally:
            stop_running_as(reset_token)


_OBJECT_START = re.compile(r"\s*\{")
#: A JSON escape of a UTF-16 surrogate (half of a pair, or a lone one).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _without_lone_surrogates(message: Message, text: str) -> Message:
    """``message`` with each lone surrogate its JSON escapes as U+FFFD.

    No UTF-8 frame can carry one back: OpenEnv's reply quoting it would fail to encode
    and end the session. A text the model wrote (a reply cut mid-character) keeps the
    rest, as the env reads it in process (:func:`~video_env.actions.reply_text.clean_text`).
    """
    if not _SURROGATE_ESCAPE.search(text):
        return message
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return message  # not JSON: OpenEnv answers INVALID_JSON
    return {**message, "text": json.dumps(clean_text(value))}


def _objects_only(receive: Receive, send: Send) -> Receive:
    """``receive`` that answers non-object messages itself and waits for the next one."""

    async def error(message: str) -> None:
        frame = {"type": "error", "data": {"message": message, "code": "VALIDATION_ERROR"}}
        await send({"type": "websocket.send", "text": json.dumps(frame)})

    async def next_message() -> Message:
        while True:
            message = await receive()
            if message["type"] != "websocket.receive":
                return message
            text = message.get("text")
            if text is None:
                try:
                    text = (message.get("bytes") or b"").decode("utf-8")
                except UnicodeDecodeError:
                    await error("a binary message that is not UTF-8 text: send JSON text")
                    continue
                message = {"type": "websocket.receive", "text": text}
            if _OBJECT_START.match(text):
                return _without_lone_surrogates(message, text)
            try:
                json.loads(text)
            except ValueError:
                return message  # not JSON: OpenEnv answers INVALID_JSON
            await error(
                'a message is a JSON object: {"type": "reset" | "step" | ..., "data": {...}}'
            )

    return next_message


async def _refuse(kind: str, receive: Receive, send: Send) -> None:
    if kind == "websocket":
        await receive()  # websocket.connect
        await send({"type": "websocket.close", "code": 1008, "reason": "unauthorized"})
        return
    await _json_reply(
        send,
        401,
        {"detail": "missing or wrong bearer token (Authorization: Bearer <token>)"},
        [(b"www-authenticate", b"Bearer")],
    )


async def _json_reply(
    send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *(headers or [])],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})
