"""``video-env serve ENV_ID``: an environment behind an OpenEnv server (``openenv`` extra)."""

from __future__ import annotations

import argparse
import json
import socket
import sys
from typing import Any

from video_env.errors import ConfigError


def _kwargs(args: argparse.Namespace) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if args.env_kwargs:
        try:
            kwargs = json.loads(args.env_kwargs)
        except ValueError as exc:
            raise ConfigError(f"--env-kwargs is not JSON: {exc}") from exc
        if not isinstance(kwargs, dict):
            raise ConfigError("--env-kwargs must be a JSON object")
    if args.dataset:
        kwargs["dataset"] = args.dataset
    if args.pixel_observations:
        kwargs["pixel_observations"] = True
    return kwargs


def _run(args: argparse.Namespace) -> int:
    try:
        return _serve(args)
    except KeyboardInterrupt:  # Ctrl-C before uvicorn took the signals over (the check)
        print("video-env: interrupted before serving", file=sys.stderr)
        return 130


def _serve(args: argparse.Namespace) -> int:
    from video_env._optional import require

    require("openenv", "openenv", "video-env serve")
    from video_env.serving.auth import exposure_warning, resolve_token
    from video_env.serving.server import check_servable, serve

    kwargs = _kwargs(args)
    token = resolve_token(args.token)
    # before binding: a server that cannot reset must not pass a health check
    check_servable(args.env_id, kwargs, args.image_format)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if args.reuse_port:  # several processes on one port: the kernel spreads connections
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((args.host, args.port))
    host, port = sock.getsockname()[:2]
    warning = exposure_warning(str(host), token)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    print(f"video-env: serving {args.env_id} on http://{host}:{port} "
          f"(max {args.max_sessions} sessions{', token required' if token else ''})",
          flush=True)  # fmt: skip
    serve(
        args.env_id,
        kwargs,
        sock=sock,
        token=token,
        max_sessions=args.max_sessions,
        session_timeout_s=args.session_timeout if args.session_timeout > 0 else None,
        max_request_bytes=args.max_request_bytes,
        image_format=args.image_format,
        one_thread=not args.thread_per_session,
        check=False,  # checked above
    )
    return 0  # SIGINT (Ctrl-C) and SIGTERM stop the server alike: exit status 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve`` subcommand."""
    parser = subparsers.add_parser(
        "serve",
        help="serve an environment over HTTP/WebSocket (OpenEnv; many sessions)",
        description=(
            "Serve ENV_ID with OpenEnv's server: each WebSocket session (/ws) gets its own "
            "environment and belongs to that connection; OpenEnv's EnvClient or "
            "video_env.serving.client.RemoteVideoEnv drives it. Before binding, the "
            "environment is built and reset on its first sample: a dataset or an env "
            "argument it cannot use exits with the reason. Ctrl-C or SIGTERM stops it "
            "(exit status 0). Needs the 'openenv' extra."
        ),
    )
    parser.add_argument("env_id", help="e.g. VideoEnv/Pacing-v1, VideoEnv/Zoom-v1")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: %(default)s)"
    )
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument(
        "--token",
        help="require 'Authorization: Bearer TOKEN' on every request but /health "
        "(default: $VIDEO_ENV_SERVE_TOKEN; clients read the same variable)",
    )
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=64,
        help="sessions at once, however made (WebSocket, HTTP, a stateless /reset running)",
    )
    parser.add_argument(
        "--session-timeout",
        type=float,
        default=300.0,
        help="close sessions idle this many seconds (0: never; default: %(default)s)",
    )
    parser.add_argument(
        "--max-request-bytes",
        type=int,
        default=1 << 20,
        help="largest request body or WebSocket message (default: %(default)s)",
    )
    parser.add_argument("--dataset", help="suite name served (default: the env's)")
    parser.add_argument("--pixel-observations", action="store_true", help="Pacing: send frames")
    parser.add_argument("--env-kwargs", help="more env arguments as JSON, e.g. '{\"budget\": 8}'")
    parser.add_argument(
        "--image-format",
        choices=("png", "jpeg"),
        default="jpeg",
        help="how frames travel: jpeg (quality 90, ~1 ms a frame) or png (lossless, ~10x slower)",
    )
    parser.add_argument(
        "--thread-per-session",
        action="store_true",
        help="run each session's env calls on its own thread (default: all on one thread; "
        "use several processes for several cores)",
    )
    parser.add_argument(
        "--reuse-port",
        action="store_true",
        help="let several serve processes share --port (Linux SO_REUSEPORT)",
    )
    parser.set_defaults(func=_run)
