"""The environment server: OpenEnv's server over :class:`VideoEnvironment` sessions.

:func:`make_app` builds the FastAPI app: OpenEnv's routes (``/ws`` sessions, one
environment each; ``/reset``, ``/step``, ``/state``, ``/schema``, ``/health``, ``/mcp``)
served by :class:`~video_env.serving.sessions.VideoEnvServer`, plus ``/sessions`` (slots in
use, environments built and closed, the server's resident memory). A session belongs to
the connection that opened it; every way of making one (a WebSocket, ``openenv/session/
create`` over HTTP, a stateless ``/reset`` while it runs) counts against ``max_sessions``;
sessions idle past ``session_timeout_s``, and HTTP-made ones no WebSocket claimed within
``unclaimed_timeout_s``, are closed (:mod:`video_env.serving.sessions`). With a ``token``
every route but ``/health`` wants ``Authorization: Bearer <token>``. Request bodies over
``max_request_bytes`` get HTTP 413 before they are read in full; a WebSocket message over
it closes that connection (code 1009), the other sessions go on. A video-env error (no
episode, a bad sample index) is HTTP 400 with its message, not 500.

:func:`serve` runs it with uvicorn (``video-env serve``), after :func:`check_servable` has
reset the environment once on its first sample; SIGINT and SIGTERM stop it alike.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import Any

from pydantic import ValidationError

from video_env import env_vars
from video_env.errors import ConfigError, VideoEnvError
from video_env.serving.auth import exposure_warning, resolve_token
from video_env.serving.environment import (
    OneThreadVideoEnvironment,
    SessionCounter,
    VideoEnvironment,
)
from video_env.serving.wire import ImageFormat, VideoObservation, VideoState, action_model

__all__ = [
    "DEFAULT_MAX_REQUEST_BYTES",
    "BodyLimit",
    "check_servable",
    "make_app",
    "resident_bytes",
    "serve",
]

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
    token: str | None = None,
    unclaimed_timeout_s: float = 30.0,
    max_unclaimed: int | None = None,
) -> Any:
    """The FastAPI app serving ``env_id`` (see the module docstring).

    Args:
        env_id: A registered environment id.
        env_kwargs: Its arguments (each session builds its own environment with them).
        max_sessions: Sessions at once, however made; one more is refused
            (``CAPACITY_REACHED``; HTTP 503 for a stateless ``/reset``).
        session_timeout_s: Sessions idle longer are closed and freed (``None``: never).
        max_request_bytes: Largest request body / WebSocket message.
        image_format: How frames travel (``"jpeg"``, or ``"png"``: lossless, slower).
        one_thread: Run every session's env calls on one worker thread
            (:class:`~video_env.serving.environment.OneThreadVideoEnvironment`, the
            default) or each session's on its own thread (OpenEnv's default; with 64 Pacing
            pixel sessions its threads' contention cut throughput about tenfold here,
            ``benchmarks/perf/remote_envs.py``).
        token: Requests must carry ``Authorization: Bearer <token>`` (``None``: no check;
            :func:`~video_env.serving.auth.resolve_token` reads the environment).
        unclaimed_timeout_s: Seconds a session made over HTTP waits for the WebSocket that
            claims it (also when ``session_timeout_s`` is ``None``).
        max_unclaimed: Sessions made over HTTP waiting at once (default: a quarter of
            ``max_sessions``, at least one).

    Raises:
        ConfigError: For an unknown id or a bad setting.
    """
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse
    from openenv.core.env_server.types import ConcurrencyConfig

    import video_env
    from video_env.envs.registration import ENV_IDS
    from video_env.serving.guard import Guard
    from video_env.serving.sessions import VideoEnvServer

    _check_env_id(env_id)
    if max_sessions < 1:
        raise ConfigError("max_sessions must be >= 1")
    if image_format not in ("png", "jpeg"):
        raise ConfigError(f"image_format must be png or jpeg, got {image_format!r}")
    if unclaimed_timeout_s <= 0 or (max_unclaimed is not None and max_unclaimed < 0):
        raise ConfigError("unclaimed_timeout_s must be > 0 and max_unclaimed >= 0")
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

    # OpenEnv's create_app, with the server class ours (its web UI is left out)
    app: FastAPI = FastAPI(
        title=f"video-env {env_id}",
        version=video_env.__version__,
        description="OpenEnv's environment API over video-env sessions (docs/serving.md).",
    )
    server = VideoEnvServer(
        factory,
        action_cls,
        VideoObservation,
        concurrency_config=ConcurrencyConfig(
            max_concurrent_envs=max_sessions, session_timeout=session_timeout_s
        ),
        env_name=env_id.split("/")[-1],
        state_cls=VideoState,
        unclaimed_timeout_s=unclaimed_timeout_s,
        max_unclaimed=max_unclaimed,
    )
    server.register_routes(app, mode=env_vars.OPENENV_MODE.get() or "simulation")

    @app.exception_handler(VideoEnvError)
    async def _video_env_error(_request: Request, exc: VideoEnvError) -> JSONResponse:
        return JSONResponse(status_code=400, content={"detail": str(exc)})

    @app.exception_handler(ValidationError)
    async def _invalid(_request: Request, exc: ValidationError) -> JSONResponse:
        # a reset's arguments refused by the one check both HTTP and WebSocket resets run
        # (wire.reset_arguments): 422, as for any other bad request body
        errors = exc.errors(include_input=False, include_context=False, include_url=False)
        return JSONResponse(status_code=422, content={"detail": errors})

    @app.get("/sessions", tags=["Health"])
    def sessions() -> dict[str, Any]:
        """Slots in use; environments built and closed; the limits; resident memory."""
        return {
            "env_id": env_id,
            **server.report(),
            "active": counter.active,
            "created": counter.created,
            "closed": counter.closed,
            "max_sessions": max_sessions,
            "session_timeout_s": session_timeout_s,
            "unclaimed_timeout_s": unclaimed_timeout_s,
            "rss_bytes": resident_bytes(),
            "pid": os.getpid(),
        }

    app.state.video_env_counter = counter
    app.state.video_env_server = server
    app.add_middleware(BodyLimit, limit=max_request_bytes)
    app.add_middleware(Guard, server=server, token=token)  # outermost: checked first
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


def check_servable(
    env_id: str, env_kwargs: dict[str, Any] | None = None, image_format: ImageFormat = "jpeg"
) -> None:
    """Refuse, before a server binds its port, what no session could serve.

    Builds the environment as each session will (``env_kwargs``: the dataset and the rest)
    and resets it on its first sample, so that an unknown id, dataset or argument, or a
    first video that cannot be read, stops ``video-env serve`` with the reason instead of
    a server whose ``/health`` answers while every reset fails.

    Raises:
        ConfigError: Naming the environment and what failed.
    """
    _check_env_id(env_id)
    environment = VideoEnvironment(env_id, env_kwargs, image_format=image_format)
    try:
        environment.reset(index=0)
    except Exception as exc:  # whatever a session's reset would meet: its reason, one line
        reason = f"{type(exc).__name__}: {exc}" if not isinstance(exc, VideoEnvError) else str(exc)
        raise ConfigError(
            f"cannot serve {env_id} with these arguments: a reset of its first sample "
            f"failed ({reason.strip()})"
        ) from None
    finally:
        environment.close()


def _check_env_id(env_id: str) -> None:
    from video_env.envs.registration import ENV_IDS

    if env_id not in ENV_IDS:
        raise ConfigError(f"unknown environment {env_id!r}; known: {sorted(ENV_IDS)}")


def serve(
    env_id: str,
    env_kwargs: dict[str, Any] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    sock: socket.socket | None = None,
    check: bool = True,
    **app_kwargs: Any,
) -> None:
    """Serve ``env_id`` until SIGINT (Ctrl-C) or SIGTERM (``app_kwargs`` go to :func:`make_app`).

    Either signal stops it the same way: open connections are closed, one line on stderr
    names the signal, and the function returns (``video-env serve`` then exits 0). A
    second Ctrl-C during the shutdown stops it at once.

    On a ``host`` other than loopback without a ``token`` it prints a warning first
    (given a bound ``sock`` instead, its caller does: ``video-env serve``).

    Args:
        env_id: A registered environment id.
        env_kwargs: Its arguments.
        host: Address to bind (unless ``sock`` is given).
        port: Port to bind (unless ``sock`` is given).
        max_request_bytes: Largest request body / WebSocket message.
        sock: A socket already bound.
        check: First run :func:`check_servable` (its caller may have, before binding).
        **app_kwargs: Further :func:`make_app` arguments.

    Raises:
        ConfigError: If the environment cannot be served (:func:`check_servable`), or
            for a bad setting.
    """
    import uvicorn

    if check:
        check_servable(env_id, env_kwargs, app_kwargs.get("image_format", "jpeg"))
    app_kwargs["token"] = resolve_token(app_kwargs.get("token"))  # as the clients read it
    app = make_app(env_id, env_kwargs, max_request_bytes=max_request_bytes, **app_kwargs)
    warning = None if sock is not None else exposure_warning(host, app_kwargs["token"])
    if warning:
        print(warning, file=sys.stderr, flush=True)
    config = uvicorn_config(app, max_request_bytes, host=host, port=port)
    server = uvicorn.Server(config)
    with _stopped_by_signals(server) as stops:
        server.run(sockets=[sock] if sock is not None else None)
    if stops:
        name = signal.Signals(stops[0]).name
        print(f"video-env: {name} received; stopped serving {env_id}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _stopped_by_signals(server: Any) -> Iterator[list[int]]:
    """SIGINT and SIGTERM stop ``server`` gracefully, and end nothing else.

    Uvicorn catches both while it serves, shuts down, then raises the signal again with
    the handler it found: Python's default for SIGINT raises ``KeyboardInterrupt`` (a
    traceback, and exit status -2), for SIGTERM ends the process. The handlers set here
    are the ones it finds: they record the signal (and, outside uvicorn's own window,
    ask the server to stop), so that either signal ends the serving quietly. The
    signals received are yielded. Off the main thread nothing is changed.
    """
    stops: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield stops
        return

    def stop(signum: int, _frame: Any) -> None:
        stops.append(signum)
        server.should_exit = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stops
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
