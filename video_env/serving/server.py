"""The environment server: OpenEnv's ``create_app`` over :class:`VideoEnvironment` sessions.

:func:`make_app` builds the FastAPI app: sessions on ``/ws`` (one environment each, up
to ``max_sessions``, those idle past ``session_timeout_s`` closed by OpenEnv's reaper),
OpenEnv's ``/reset``, ``/step``, ``/state``, ``/schema``, ``/health``, plus
``/sessions`` (environments open, built and closed, and the server's resident memory).
Request bodies over ``max_request_bytes`` get HTTP 413 before they are read in full; a
WebSocket message over it closes that connection (code 1009), the other sessions go on.
A video-env error (no episode, a bad sample index) is HTTP 400 with its message, not 500.

:func:`serve` runs it with uvicorn (``video-env serve``).
"""

from __future__ import annotations

import functools
import json
import os
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from video_env.errors import ConfigError, VideoEnvError
from video_env.serving.environment import (
    OneThreadVideoEnvironment,
    SessionCounter,
    VideoEnvironment,
)
from video_env.serving.wire import ImageFormat, VideoObservation, VideoState, action_model

__all__ = ["DEFAULT_MAX_REQUEST_BYTES", "BodyLimit", "make_app", "resident_bytes", "serve"]

#: Largest request body or WebSocket message accepted (actions are small).
DEFAULT_MAX_REQUEST_BYTES = 1 << 20

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def resident_bytes() -> int:
    """This process's resident memory (Linux ``/proc``; 0 where unknown)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


class BodyLimit:
    """ASGI middleware: HTTP 413 for a request body over ``limit`` bytes.

    Checks ``Content-Length`` first, then counts the bytes of a chunked body as they come.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer 413."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await _too_large(send, self.limit)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:  # only counted() raises it
            await _too_large(send, self.limit)


class _TooLarge(Exception):
    pass


async def _too_large(send: Send, limit: int) -> None:
    body = json.dumps({"detail": f"request body over {limit} bytes"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
        }
    )
    await send({"type": "http.response.body", "body": body})


def make_app(
    env_id: str,
    env_kwargs: dict[str, Any] | None = None,
    *,
    max_sessions: int = 64,
    session_timeout_s: float | None = 300.0,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    image_format: ImageFormat = "jpeg",
    one_thread: bool = True,
) -> Any:
    """The FastAPI app serving ``env_id`` (see the module docstring).

    Args:
        env_id: A registered environment id.
        env_kwargs: Its arguments (each session builds its own environment with them).
        max_sessions: Sessions at once; one more is refused (``CAPACITY_REACHED``).
        session_timeout_s: Sessions idle longer are closed and freed (``None``: never).
        max_request_bytes: Largest request body / WebSocket message.
        image_format: How frames travel (``"jpeg"``, or ``"png"``: lossless, slower).
        one_thread: Run every session's env calls on one worker thread
            (:class:`~video_env.serving.environment.OneThreadVideoEnvironment`, the
            default) or each session's on its own thread (OpenEnv's default; with 64 Pacing
            pixel sessions its threads' contention cut throughput about tenfold here,
            ``benchmarks/perf/remote_envs.py``).

    Raises:
        ConfigError: For an unknown id or a bad setting.
    """
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.types import ConcurrencyConfig

    import video_env  # noqa: F401  (registers the ids)
    from video_env.envs.registration import ENV_IDS

    if env_id not in ENV_IDS:
        raise ConfigError(f"unknown environment {env_id!r}; known: {sorted(ENV_IDS)}")
    if max_sessions < 1:
        raise ConfigError("max_sessions must be >= 1")
    if image_format not in ("png", "jpeg"):
        raise ConfigError(f"image_format must be png or jpeg, got {image_format!r}")
    env_class = ENV_IDS[env_id].rsplit(":", 1)[1]
    action_cls = action_model(env_class)
    kwargs = dict(env_kwargs or {})
    counter = SessionCounter()

    # a partial of the class, so that OpenEnv sees the class's thread requirement
    factory = functools.partial(
        OneThreadVideoEnvironment if one_thread else VideoEnvironment,
        env_id,
        kwargs,
        image_format=image_format,
        counter=counter,
    )

    app: FastAPI = create_app(
        factory,
        action_cls,
        VideoObservation,
        env_name=env_id.split("/")[-1],
        concurrency_config=ConcurrencyConfig(
            max_concurrent_envs=max_sessions, session_timeout=session_timeout_s
        ),
        state_cls=VideoState,
    )

    @app.exception_handler(VideoEnvError)
    async def _video_env_error(_request: Request, exc: VideoEnvError) -> JSONResponse:
        return JSONResponse(status_code=400, content={"detail": str(exc)})

    @app.get("/sessions", tags=["Health"])
    def sessions() -> dict[str, Any]:
        """Environments open, built and closed; the limits; resident memory."""
        return {
            "env_id": env_id,
            "active": counter.active,
            "created": counter.created,
            "closed": counter.closed,
            "max_sessions": max_sessions,
            "session_timeout_s": session_timeout_s,
            "rss_bytes": resident_bytes(),
            "pid": os.getpid(),
        }

    app.state.video_env_counter = counter
    app.add_middleware(BodyLimit, limit=max_request_bytes)
    return app


def uvicorn_config(app: Any, max_request_bytes: int, **kwargs: Any) -> Any:
    """Uvicorn's settings for the app: WebSocket messages capped, quiet access log.

    Per-message deflate is off: clients offer it by default (OpenEnv's too), and deflating
    every observation (JPEG frames in base64 barely shrink) costs the server more CPU than
    the step's own JPEG encoding.
    """
    import uvicorn

    return uvicorn.Config(
        app,
        ws_max_size=max_request_bytes,
        ws_per_message_deflate=False,
        log_level=kwargs.pop("log_level", "warning"),
        access_log=False,
        **kwargs,
    )


def serve(
    env_id: str,
    env_kwargs: dict[str, Any] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    sock: socket.socket | None = None,
    **app_kwargs: Any,
) -> None:
    """Serve ``env_id`` until interrupted (``app_kwargs`` go to :func:`make_app`)."""
    import uvicorn

    app = make_app(env_id, env_kwargs, max_request_bytes=max_request_bytes, **app_kwargs)
    config = uvicorn_config(app, max_request_bytes, host=host, port=port)
    server = uvicorn.Server(config)
    server.run(sockets=[sock] if sock is not None else None)
