"""The server's optional bearer token, and where a server is reachable from.

A server started with a token (``video-env serve --token``, or :data:`TOKEN_ENV` in its
environment) answers only requests that carry ``Authorization: Bearer <token>``;
:class:`~video_env.serving.client.RemoteVideoEnv` sends it (its ``token`` argument, else
:data:`TOKEN_ENV`). Without a token a server bound to an address other than the loopback
one says so when it starts (:func:`exposure_warning`). No OpenEnv here.
"""

from __future__ import annotations

import hmac
import ipaddress

from video_env import env_vars
from video_env.errors import ConfigError

__all__ = [
    "TOKEN_ENV",
    "auth_headers",
    "exposure_warning",
    "is_loopback",
    "resolve_token",
    "token_matches",
]

#: The environment variable a server and its clients read the token from.
TOKEN_ENV = env_vars.SERVE_TOKEN.name


def resolve_token(token: str | None = None) -> str | None:
    """``token``, else :data:`TOKEN_ENV`'s value; ``None`` for none (or an empty one).

    Raises:
        ConfigError: For a token no client could send: surrounding spaces, or characters
            other than printable ASCII (HTTP headers carry Latin-1 and strip spaces).
    """
    if token is None:
        token = env_vars.SERVE_TOKEN.get()
    if token and (token != token.strip() or not (token.isascii() and token.isprintable())):
        raise ConfigError(
            "the serve token must be printable ASCII without surrounding spaces: no client "
            "could send it in an Authorization header"
        )
    return token or None


def auth_headers(token: str | None) -> dict[str, str]:
    """The HTTP headers that carry ``token`` (none for no token)."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def token_matches(header: bytes | None, token: str) -> bool:
    """Whether an ``Authorization`` header value is ``Bearer <token>`` (constant time)."""
    if header is None:
        return False
    scheme, _, given = header.partition(b" ")
    if scheme.lower() != b"bearer":
        return False
    return hmac.compare_digest(given.strip(), token.encode())


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``127.0.0.1``, ``::1``, ``localhost``)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.lower() == "localhost"


def exposure_warning(host: str, token: str | None) -> str | None:
    """What to tell the user serving on ``host`` without a token; ``None`` if nothing."""
    if token or is_loopback(host):
        return None
    return (
        f"video-env: warning: serving on {host or '0.0.0.0'} without a token: anyone who "
        "can reach this port can open sessions and use this machine's CPU and memory. Set "
        f"--token or {TOKEN_ENV} (clients send it: RemoteVideoEnv(token=...) or "
        f"{TOKEN_ENV}), or bind 127.0.0.1."
    )
