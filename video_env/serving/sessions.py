"""Whose a session is, how many there may be, and when the unused ones go.

OpenEnv's server (``HTTPEnvServer``) keeps its sessions in one table keyed by session id,
and takes ids from its clients in three places: a WebSocket attaching with
``/ws?session_id=``, the MCP method ``openenv/session/close`` (``POST /mcp``, or an ``mcp``
message on any WebSocket), and MCP calls with ``params.session_id``. Left as they are, a
session is anyone's who knows its id. :class:`VideoEnvServer` subclasses it with
:class:`OwnedSessions` as that table: each session has an owner, and a lookup by id made
for another connection finds nothing (``Unknown session_id``), so no one else can attach
to, step, read or close it.

- A session opened by a WebSocket (``/ws``, ``/mcp``) is that connection's; it ends when
  the connection does.
- A session made over HTTP (``openenv/session/create``) is a :class:`Ticket` until one
  WebSocket claims it with ``/ws?session_id=``; from then on it is that connection's and
  ends with it. Unclaimed, it is gone after ``unclaimed_timeout_s`` (also when
  ``session_timeout`` is off), and at most ``max_unclaimed`` wait at once, so HTTP alone
  cannot fill the server.
- A stateless ``POST /reset`` builds a whole environment for the request: while it runs
  it holds a slot (:meth:`VideoEnvServer.reserve_stateless`).

Every one of them counts against ``max_sessions``. Which connection a request is
(:func:`current_connection`) is set by :class:`~video_env.serving.guard.Guard`, the ASGI
middleware that also checks the bearer token, holds a stateless reset's slot and ends a
connection's sessions when it closes.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from openenv.core.env_server.exceptions import SessionCapacityError
from openenv.core.env_server.http_server import HTTPEnvServer

__all__ = [
    "Connection",
    "OwnedSessions",
    "Ticket",
    "VideoEnvServer",
    "current_connection",
    "running_as",
    "stop_running_as",
]

_log = logging.getLogger(__name__)


@dataclass(eq=False)
class Connection:
    """One HTTP request or one WebSocket connection (compared by identity)."""

    kind: str  # "http" or "websocket"
    path: str


@dataclass(eq=False)
class Ticket:
    """A session made over HTTP that no WebSocket has claimed yet."""

    created: float = field(default_factory=time.monotonic)


@dataclass(eq=False)
class _Held:
    """A slot the server holds for itself (a stateless reset, a session being reaped)."""

    why: str


_CONNECTION: contextvars.ContextVar[Connection | None] = contextvars.ContextVar(
    "video_env_connection", default=None
)


def current_connection() -> Connection | None:
    """The connection the running request belongs to (``None``: the server itself)."""
    return _CONNECTION.get()


def running_as(connection: Connection | None) -> contextvars.Token[Connection | None]:
    """Make ``connection`` the current one (until :func:`stop_running_as`)."""
    return _CONNECTION.set(connection)


def stop_running_as(token: contextvars.Token[Connection | None]) -> None:
    """Undo :func:`running_as`."""
    _CONNECTION.reset(token)


class OwnedSessions(dict[str, Any]):
    """OpenEnv's session table, where each session has an owner.

    ``get`` and ``pop`` by id see a session only for its owner, the server itself (no
    current connection), or anyone while it is an unclaimed :class:`Ticket`; a WebSocket
    that finds a ready ticket claims it. Entries OpenEnv adds are owned by the WebSocket
    that adds them, or are tickets when an HTTP request does.
    """

    def __init__(self) -> None:
        super().__init__()
        self.owners: dict[str, Connection | Ticket | _Held] = {}

    def _visible(self, key: str, caller: Connection | None) -> bool:
        owner = self.owners.get(key)
        return caller is None or owner is None or owner is caller or isinstance(owner, Ticket)

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in self.owners:
            caller = current_connection()
            self.owners[key] = caller if caller and caller.kind == "websocket" else Ticket()
        super().__setitem__(key, value)

    def get(self, key: str, default: Any = None) -> Any:
        """The session ``key`` if the current connection may see it (claiming a ticket)."""
        caller = current_connection()
        if not self._visible(key, caller):
            return default
        value = super().get(key, default)
        if (
            caller is not None
            and caller.kind == "websocket"
            and value is not None
            and value is not default
            and isinstance(self.owners.get(key), Ticket)
        ):
            self.owners[key] = caller  # /ws?session_id=: the first WebSocket claims it
        return value

    def pop(self, key: str, *default: Any) -> Any:
        """Remove ``key`` if the current connection may (else as if it were absent)."""
        if not self._visible(key, current_connection()):
            if default:
                return default[0]
            raise KeyError(key)
        self.owners.pop(key, None)
        return super().pop(key, *default)

    def hold(self, why: str) -> str:
        """Take a slot for the server (a placeholder session id)."""
        key = f"{why}-{uuid.uuid4()}"
        self.owners[key] = _Held(why)
        dict.__setitem__(self, key, None)
        return key

    def release(self, key: str) -> None:
        """Give back a slot of :meth:`hold`."""
        self.owners.pop(key, None)
        dict.pop(self, key, None)

    def owned_by(self, owner: object) -> list[str]:
        """The ids of the sessions ``owner`` holds."""
        return [key for key, held_by in self.owners.items() if held_by is owner]

    def count(self, kind: type) -> int:
        """Sessions whose owner is a ``kind`` (:class:`Ticket`, :class:`Connection`...)."""
        return sum(isinstance(owner, kind) for owner in self.owners.values())

    def held(self, why: str) -> int:
        """Slots the server holds for ``why``."""
        return sum(isinstance(o, _Held) and o.why == why for o in self.owners.values())


class _AttachedSet(set[str]):
    """OpenEnv's set of attached sessions, where ``in`` sees only what ``sessions`` shows."""

    def __init__(self, sessions: OwnedSessions) -> None:
        super().__init__()
        self.sessions = sessions

    def __contains__(self, key: object) -> bool:
        visible = not isinstance(key, str) or self.sessions._visible(key, current_connection())
        return visible and super().__contains__(key)


class VideoEnvServer(HTTPEnvServer):
    """OpenEnv's server with owned sessions, shared capacity and a reaper for tickets.

    Args:
        *args: ``HTTPEnvServer``'s.
        unclaimed_timeout_s: Seconds an HTTP-made session waits for its WebSocket.
        max_unclaimed: HTTP-made sessions waiting at once (default: a quarter of the
            sessions, at least one).
        **kwargs: ``HTTPEnvServer``'s.
    """

    STATELESS_RESET = "stateless-reset"
    _reaper_task: asyncio.Task[None] | None

    def __init__(
        self,
        *args: Any,
        unclaimed_timeout_s: float = 30.0,
        max_unclaimed: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._sessions: OwnedSessions = OwnedSessions()
        self._session_websocket_attachments = _AttachedSet(self._sessions)
        self.unclaimed_timeout_s = unclaimed_timeout_s
        self.max_unclaimed = (
            max(1, self._max_concurrent_envs // 4) if max_unclaimed is None else max_unclaimed
        )
        self._making_tickets = 0
        # OpenEnv runs stateless calls (HTTP /reset, /step) on a pool of 32 threads: 14
        # pixel resets at once took 1 GB and, contending for the GIL, held a session's
        # steps up for a second (benchmarks/perf/server_load.py). One thread of their own.
        pool: ThreadPoolExecutor = getattr(self, "_executor")  # noqa: B009 (openenv's, untyped)
        pool.shutdown(wait=False)  # openenv's pool of 32, replaced before any use
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stateless")
        timeouts = [unclaimed_timeout_s, self._session_idle_timeout_s or unclaimed_timeout_s]
        self.reap_every_s = max(0.05, min(5.0, *(t / 4 for t in timeouts)))

    # -- how many ----------------------------------------------------------------------

    def report(self) -> dict[str, int]:
        """Slots in use, by kind (``sessions`` is what ``max_sessions`` counts)."""
        return {
            "sessions": len(self._sessions),
            "unclaimed": self._sessions.count(Ticket),
            "stateless_resets": self._sessions.held(self.STATELESS_RESET),
        }

    async def _create_session(self) -> tuple[str, Any]:
        caller = current_connection()
        if caller is None or caller.kind == "websocket":
            return await super()._create_session()  # type: ignore[no-any-return]
        waiting = self._sessions.count(Ticket) + self._making_tickets
        if waiting >= self.max_unclaimed:
            raise SessionCapacityError(
                active_sessions=len(self._sessions),
                max_sessions=self._max_concurrent_envs,
                message=(
                    "too many sessions made over HTTP wait for their WebSocket "
                    f"({waiting}, at most {self.max_unclaimed}); open a WebSocket at /ws"
                ),
            )
        self._making_tickets += 1
        try:
            return await super()._create_session()  # type: ignore[no-any-return]
        finally:
            self._making_tickets -= 1

    def reserve_stateless(self) -> str:
        """A slot for one stateless ``/reset`` (its whole environment, while it runs).

        Raises:
            SessionCapacityError: When every slot is taken.
        """
        if len(self._sessions) >= self._max_concurrent_envs:
            raise SessionCapacityError(
                active_sessions=len(self._sessions), max_sessions=self._max_concurrent_envs
            )
        return self._sessions.hold(self.STATELESS_RESET)

    def release_stateless(self, key: str) -> None:
        """Give back a slot of :meth:`reserve_stateless`."""
        self._sessions.release(key)

    # -- when they go ------------------------------------------------------------------

    async def end_sessions_of(self, connection: Connection) -> None:
        """End the sessions ``connection`` holds (it has closed)."""
        for session_id in self._sessions.owned_by(connection):
            await asyncio.shield(self._destroy_session(session_id))

    def _start_reaper(self) -> None:
        if self._reaper_task is None:  # always: tickets expire without a session timeout
            self._reaper_task = asyncio.create_task(self._reap_idle_sessions())

    def _is_stale(self, session_id: str) -> bool:
        """An unclaimed ticket past its timeout, or a session idle past the session's."""
        owner = self._sessions.owners.get(session_id)
        if owner is None or dict.get(self._sessions, session_id) is None:
            return False  # gone, being built, or a slot the server holds
        if isinstance(owner, Ticket):
            return time.monotonic() - owner.created > self.unclaimed_timeout_s
        timeout = self._session_idle_timeout_s
        info = self._session_info.get(session_id)
        return bool(
            timeout is not None
            and info is not None
            and time.time() - info.last_activity_at > timeout
        )

    async def _reap_idle_sessions(self) -> None:
        _CONNECTION.set(None)  # this task acts for the server
        while True:
            try:
                await asyncio.sleep(self.reap_every_s)
                for session_id in list(self._sessions.owners):
                    if not self._is_stale(session_id):
                        continue
                    if isinstance(self._sessions.owners[session_id], Ticket):
                        # no await since the check: no WebSocket can claim it any more
                        self._sessions.owners[session_id] = _Held("reaping")
                    await self._destroy_session(session_id)
            except asyncio.CancelledError:
                break
            except Exception as exc:  # keep reaping
                _log.warning("video-env: the session reaper failed (will retry): %s", exc)
