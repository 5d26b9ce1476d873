"""Clients of the environment server.

:class:`VideoEnvClient` is OpenEnv's ``EnvClient`` for it (async; ``.sync()`` for
blocking calls): one instance, one session on the server. :class:`RemoteVideoEnv` wraps
it in the in-process environment's calls — ``reset(seed, options)`` → ``(observation,
info)``, ``step(action)`` → the Gymnasium 5-tuple, ``abandon(reason)`` — where the
observation is the same dict of arrays the in-process environment returns (frames
rebuilt from the images: identical with PNG), so policies run unchanged against a
remote environment. Actions may be the dataclasses of :mod:`video_env.actions`, an
LLM's raw reply (``str``: parsed on the server) or a wire action.

A session is its connection. Once that is lost mid-episode (the server closed it, no
reply within ``message_timeout_s``, a reply that is not the protocol's), ``step`` and
``state`` raise :class:`RemoteSessionError` (a ``ConnectionError``) rather than open a
new, empty session in its place, as OpenEnv's client does; ``reset`` starts a new one.
An error the server states (``EXECUTION_ERROR``: no episode, a bad sample) is OpenEnv's
``RuntimeError``, and the session goes on. Both take the server's token, if it has one
(``token=``, else ``$VIDEO_ENV_SERVE_TOKEN``); a server that refuses the token sent (or
its absence) raises :class:`RemoteAuthError`, which says how to pass it.
"""

from __future__ import annotations

import asyncio
import binascii
import contextlib
from collections.abc import Awaitable
from typing import Any, NoReturn, TypeVar

import numpy as np
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from websockets.protocol import State as SocketState

from video_env._closing import Closing
from video_env.actions.types import (
    AnswerAction,
    EvaluateAction,
    InvalidAction,
    QueryAction,
    RewatchAction,
    SpeedAction,
)
from video_env.errors import ConfigError, VideoEnvError
from video_env.serving.auth import TOKEN_ENV, auth_headers, resolve_token
from video_env.serving.wire import (
    PacingWireAction,
    VideoObservation,
    VideoState,
    WireAction,
    action_model,
    decode_frames,
    decode_value,
)

__all__ = [
    "RemoteAuthError",
    "RemoteSessionError",
    "RemoteVideoEnv",
    "VideoEnvClient",
    "observation_arrays",
    "wire_action",
]

T = TypeVar("T")

#: Largest frames array a reply may ask the client to build (``frames_shape``).
MAX_FRAMES_BYTES = 1 << 30


class RemoteSessionError(VideoEnvError, ConnectionError):
    """The remote session is gone: its connection closed, a reply late or garbled.

    Its episode cannot go on: ``reset`` starts a new session.
    """


class RemoteAuthError(RemoteSessionError):
    """The server refused the connection for want of its token (HTTP 401 or 403).

    A server started with ``--token`` (or :data:`~video_env.serving.auth.TOKEN_ENV`) wants
    the same token from its clients: ``RemoteVideoEnv(url, token=...)``, or the variable
    set where the client runs. No session was opened.
    """


#: HTTP statuses of a refused token: 401 from the HTTP routes, 403 from the WebSocket's.
_REFUSED = (401, 403)


def _refused_status(exc: BaseException) -> int | None:
    """The HTTP status of a token refusal behind ``exc`` (its causes included), if any."""
    seen: BaseException | None = exc
    for _ in range(8):  # a short chain: OpenEnv's ConnectionError over websockets' error
        if seen is None:
            return None
        status = getattr(getattr(seen, "response", None), "status_code", None)
        if status in _REFUSED:
            return int(status)
        seen = seen.__cause__ or seen.__context__
    return None


class VideoEnvClient(EnvClient[WireAction, VideoObservation, VideoState]):
    """OpenEnv's client of a video-env server (``base_url``: ``http://host:port``).

    Unlike OpenEnv's, it does not reconnect under a running episode (see the module
    docstring): ``step`` and ``state`` on a lost session raise
    :class:`RemoteSessionError`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.url = kwargs.get("base_url") or (args[0] if args else None)  # for messages
        self.lost: str | None = None  # why the session's connection is gone
        self.refused: int | None = None  # the HTTP status of a refused token, if one was
        self._session_socket: Any = None  # the connection the last reset went over
        self._pinned = False  # in a step or state: no new connection

    def mark_lost(self, reason: str) -> None:
        """Record that the session is gone (a reply the caller could not use)."""
        self.lost = self.lost or reason

    async def _connect_async(self) -> Any:
        socket = self._ws
        gone = socket is None or socket.state in (SocketState.CLOSING, SocketState.CLOSED)
        if self._pinned and gone and self._session_socket is not None:
            self.mark_lost("the server closed the connection")
            raise RemoteSessionError(f"the session is lost ({self.lost}); reset starts a new one")
        return await super()._connect_async()

    async def _reset_async(self, **kwargs: Any) -> StepResult[VideoObservation]:
        self.lost = self.refused = None
        result = await self._guard("reset", super()._reset_async(**kwargs))
        self._session_socket = self._ws
        return result

    async def _step_async(self, action: WireAction, **kwargs: Any) -> StepResult[VideoObservation]:
        return await self._pinned_call("step", super()._step_async(action, **kwargs))

    async def _state_async(self) -> VideoState:
        return await self._pinned_call("state", super()._state_async())

    async def _pinned_call(self, what: str, call: Awaitable[T]) -> T:
        if self.lost is not None:
            if hasattr(call, "close"):
                call.close()  # never awaited
            if self.refused is not None:
                raise RemoteAuthError(self._token_advice(what, self.refused))
            raise RemoteSessionError(
                f"{what}: the session is lost ({self.lost}); reset starts a new one"
            )
        self._pinned = True
        try:
            return await self._guard(what, call)
        finally:
            self._pinned = False

    async def _guard(self, what: str, call: Awaitable[T]) -> T:
        try:
            return await call
        except RemoteSessionError:
            await self._drop()
            raise
        except RuntimeError as exc:
            if str(exc).startswith("Server error:"):
                raise  # the server's own answer: the session goes on
            reason = f"{type(exc).__name__}: {exc}"
        except (asyncio.TimeoutError, TimeoutError):  # the same from Python 3.11
            reason = f"no reply within {self._message_timeout:g} s"
        except Exception as exc:  # closed, garbled, refused: the session is gone
            status = _refused_status(exc)
            if status is not None:
                self.refused = status
                self.mark_lost(f"HTTP {status}: the server wants its token")
                await self._drop()
                raise RemoteAuthError(self._token_advice(what, status)) from exc
            reason = f"{type(exc).__name__}: {exc}"
        self.mark_lost(reason)
        await self._drop()
        if what == "reset":  # no session to lose: none was opened
            raise RemoteSessionError(f"reset: no session was opened ({reason})")
        raise RemoteSessionError(
            f"{what}: the session is lost ({self.lost}); reset starts a new one"
        )

    def _token_advice(self, what: str, status: int) -> str:
        """What a token refusal means and how to send the server's token."""
        sent = "Authorization" in (self._headers or {})
        told = "the token this client sent is not the server's" if sent else "it sent none"
        return (
            f"{what}: the server at {self.url} refused the connection (HTTP {status}): "
            f"it wants the token it was started with, and {told}. Pass it as "
            f"RemoteVideoEnv(url, token=...) or set {TOKEN_ENV} where the client runs."
        )

    async def _drop(self) -> None:
        with contextlib.suppress(Exception):  # the socket may be half-gone already
            await self._disconnect_async()

    def _step_payload(self, action: WireAction) -> dict[str, Any]:
        payload: dict[str, Any] = action.model_dump(exclude_none=True, exclude={"metadata"})
        return payload

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[VideoObservation]:
        if not isinstance(payload, dict) or not isinstance(payload.get("observation"), dict):
            raise ValueError(f"not an observation: {str(payload)[:200]}")
        fields = dict(payload["observation"])
        fields.pop("metadata", None)
        observation = VideoObservation(
            **fields, reward=payload.get("reward"), done=bool(payload.get("done", False))
        )
        return StepResult(
            observation=observation, reward=payload.get("reward"), done=observation.done
        )

    def _parse_state(self, payload: dict[str, Any]) -> VideoState:
        return VideoState(**payload)


def observation_arrays(observation: VideoObservation) -> dict[str, Any]:
    """The Gymnasium observation of a wire observation (frames back in their array).

    Raises:
        ValueError: If its frames do not fit ``frames_shape`` (or that is over
            :data:`MAX_FRAMES_BYTES`), or are not images.
    """
    out: dict[str, Any] = decode_value(observation.observation)
    shape = observation.frames_shape
    if shape is not None:
        size = int(np.prod([max(d, 0) for d in shape], dtype=object)) if shape else 0
        if len(shape) != 4 or shape[3] != 3 or min(shape) < 0 or size > MAX_FRAMES_BYTES:
            raise ValueError(f"frames_shape {shape} is not a frames array's (N, H, W, 3)")
        if len(observation.frames) > shape[0]:
            raise ValueError(f"{len(observation.frames)} frames for frames_shape {shape}")
        frames = np.zeros(tuple(shape), dtype=np.uint8)
        for i, pixels in enumerate(decode_frames(observation.frames)):
            h, w = pixels.shape[:2]
            if h > shape[1] or w > shape[2]:
                raise ValueError(f"a {h}x{w} frame in frames_shape {shape}")
            frames[i, :h, :w] = pixels
        out["frames"] = frames
    return out


def wire_action(action: Any, env_class: str) -> WireAction:
    """A wire action of ``env_class`` (``"PacingEnv"``...) from an env action or text.

    Raises:
        ConfigError: For an action the env class has no wire form of.
    """
    if isinstance(action, WireAction):
        return action
    model = action_model(env_class)
    fields: dict[str, Any]
    if isinstance(action, str):
        fields = {"kind": "text", "text": action}
    elif isinstance(action, InvalidAction):
        fields = {"kind": "text", "text": action.raw or ""}
    elif isinstance(action, AnswerAction):
        window = None if action.window is None else (action.window.start, action.window.end)
        fields = {"kind": "answer", "answer": action.text, "window": window}
        if action.memory is not None and model is PacingWireAction:
            fields["memory"] = action.memory
    elif isinstance(action, SpeedAction):
        fields = {"kind": "speed", "factor": action.factor, "memory": action.memory}
    elif isinstance(action, RewatchAction):
        fields = {"kind": "rewatch", "chunk": action.chunk, "memory": action.memory}
    elif isinstance(action, EvaluateAction):
        fields = {"kind": "evaluate", "windows": [(w.start, w.end) for w in action.windows]}
    elif isinstance(action, QueryAction):
        queries = [{"segment": q.segment, "text": q.text} for q in action.queries]
        fields = {"kind": "query", "queries": queries}
    else:
        raise ConfigError(f"no wire form for {type(action).__name__}")
    try:
        return model(**{k: v for k, v in fields.items() if v is not None})
    except ValueError as exc:  # pydantic: e.g. a speed action for Zoom
        raise ConfigError(f"{type(action).__name__} is not a {env_class} action: {exc}") from exc


class RemoteVideoEnv(Closing):
    """A remote session with the in-process environment's calls (see the module docstring).

    Args:
        base_url: The server, ``http://127.0.0.1:8000``.
        env_class: The served environment's class (``"PacingEnv"``, ``"ZoomEnv"``,
            ``"ClipQueryEnv"``): which wire actions to build.
        message_timeout_s: Seconds to wait for a reply.
        token: The server's bearer token (default: ``$VIDEO_ENV_SERVE_TOKEN``, if set).
    """

    def __init__(
        self,
        base_url: str,
        env_class: str = "PacingEnv",
        *,
        message_timeout_s: float = 60.0,
        token: str | None = None,
    ) -> None:
        self.base_url = base_url
        self.env_class = env_class
        headers = auth_headers(resolve_token(token)) or None
        self.client = VideoEnvClient(
            base_url=base_url, message_timeout_s=message_timeout_s, headers=headers
        ).sync()
        self.last: VideoObservation | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode on ``options["index"]`` or ``options["sample_id"]``."""
        options = dict(options or {})
        if "sample" in options:
            raise ConfigError("a remote env picks samples by index or sample_id, not object")
        kwargs: dict[str, Any] = {k: options[k] for k in ("index", "sample_id") if k in options}
        if seed is not None:
            kwargs["seed"] = seed
        result = self.client.reset(**kwargs)
        self.last = result.observation
        return self._arrays("reset", result.observation), dict(result.observation.info)

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Apply an action; the Gymnasium 5-tuple.

        Raises:
            RemoteSessionError: If the session is lost (reset starts a new one).
        """
        result = self.client.step(wire_action(action, self.env_class))
        obs = result.observation
        self.last = obs
        reward = float(result.reward or 0.0)
        arrays = self._arrays("step", obs)
        return arrays, reward, obs.terminated, obs.truncated, dict(obs.info)

    def abandon(self, reason: str) -> dict[str, Any]:
        """End the episode without an answer; its record.

        Raises:
            RemoteSessionError: If the session is lost (there is no record to return).
        """
        result = self.client.step(action_model(self.env_class)(kind="abandon", reason=reason))
        self.last = result.observation
        record = result.observation.info.get("episode")
        if not isinstance(record, dict):
            self._lose("abandon", f"a reply without the episode's record: {str(record)[:100]}")
        return dict(record)

    def _arrays(self, what: str, observation: VideoObservation) -> dict[str, Any]:
        """The observation's arrays; a reply whose frames cannot be rebuilt loses the session."""
        try:
            return observation_arrays(observation)
        except (ValueError, OSError, MemoryError, binascii.Error) as exc:
            self._lose(what, f"{type(exc).__name__}: {exc}")

    def _lose(self, what: str, reason: str) -> NoReturn:
        self.client.mark_lost(reason)
        with contextlib.suppress(Exception):  # the socket may be half-gone already
            self.client.disconnect()
        raise RemoteSessionError(f"{what}: the session is lost ({reason}); reset starts a new one")

    def state(self) -> VideoState:
        """The session's state on the server."""
        state: VideoState = self.client.state()
        return state

    def close(self) -> None:
        """End the session (the server frees its environment)."""
        self.client.close()
