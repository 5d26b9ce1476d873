"""One disk cache shared by every backend, policy, run and worker process.

Captions, VLM answers, CLIP image features and judge verdicts are stored in a single
:mod:`diskcache` directory (SQLite index + files): process- and thread-safe, with a size
cap enforced by eviction (least recently stored first). A key is the BLAKE2 hash of the
JSON of everything that changes the value (video fingerprint, timestamps, size, the
backend's ``config``, prompt, generation settings), prefixed by a namespace
(``caption``, ``vlm``, ``clip``, ``judge``) that is also the entry's tag, so one kind can
be cleared alone.

The directory is ``$VIDEO_ENV_CACHE_DIR`` or ``~/.cache/video-env``; the size cap
``$VIDEO_ENV_CACHE_SIZE_GB`` (default 8 GB); ``VIDEO_ENV_CACHE=off`` disables caching.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from video_env._optional import require
from video_env.errors import ConfigError

#: Kinds of cached values (namespaces and tags).
KINDS = ("caption", "vlm", "clip", "judge")

#: Default size cap in gigabytes.
DEFAULT_SIZE_GB = 8.0

_MISSING = object()


def default_directory() -> Path:
    """``$VIDEO_ENV_CACHE_DIR`` or ``~/.cache/video-env``."""
    configured = os.environ.get("VIDEO_ENV_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "video-env"


def default_size_limit() -> int:
    """The size cap in bytes (``$VIDEO_ENV_CACHE_SIZE_GB``, default 8 GB).

    Raises:
        ConfigError: If the variable is not a positive number.
    """
    text = os.environ.get("VIDEO_ENV_CACHE_SIZE_GB", str(DEFAULT_SIZE_GB))
    try:
        gigabytes = float(text)
    except ValueError:
        raise ConfigError(f"VIDEO_ENV_CACHE_SIZE_GB must be a number, got {text!r}") from None
    if not gigabytes > 0:
        raise ConfigError(f"VIDEO_ENV_CACHE_SIZE_GB must be > 0, got {text!r}")
    return int(gigabytes * 1e9)


def caching_enabled() -> bool:
    """False when ``VIDEO_ENV_CACHE`` is ``off``, ``0`` or ``false``."""
    return os.environ.get("VIDEO_ENV_CACHE", "on").strip().lower() not in ("off", "0", "false")


def cache_key(kind: str, parts: Mapping[str, Any]) -> str:
    """The key of a value: ``kind:`` + BLAKE2b of the canonical JSON of ``parts``.

    Raises:
        ConfigError: For an unknown kind.
        TypeError: If ``parts`` is not JSON-serialisable.
    """
    if kind not in KINDS:
        raise ConfigError(f"unknown cache kind {kind!r}; known: {', '.join(KINDS)}")
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{kind}:{hashlib.blake2b(text.encode(), digest_size=16).hexdigest()}"


@dataclass(frozen=True)
class CacheInfo:
    """What ``video-env cache info`` shows."""

    directory: str
    entries: int
    bytes: int
    size_limit: int
    by_kind: dict[str, int]


class DiskCache:
    """A size-capped, process-safe disk cache of backend results.

    Args:
        directory: Where the cache lives (default: :func:`default_directory`).
        size_limit: Byte cap (default: :func:`default_size_limit`).

    Raises:
        BackendNotInstalled: If ``diskcache`` is not installed.
    """

    def __init__(
        self, directory: str | os.PathLike[str] | None = None, size_limit: int | None = None
    ):
        diskcache = require("diskcache", "models", "the disk cache of model outputs")
        self.directory = Path(directory) if directory is not None else default_directory()
        self.size_limit = size_limit if size_limit is not None else default_size_limit()
        self.directory.mkdir(parents=True, exist_ok=True)
        with _opening(self.directory):
            self._cache = diskcache.Cache(
                str(self.directory), size_limit=self.size_limit, tag_index=True, timeout=60
            )
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Any:
        """The value stored under ``key``, or ``None``."""
        value = self._cache.get(key, default=_MISSING, retry=True)
        if value is _MISSING:
            self.misses += 1
            return None
        self.hits += 1
        return value

    def set(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` (tagged with the key's kind)."""
        self._cache.set(key, value, tag=key.split(":", 1)[0], retry=True)

    def __contains__(self, key: str) -> bool:
        return key in self._cache

    def info(self) -> CacheInfo:
        """Entries, bytes on disk and entries per kind."""
        by_kind = dict.fromkeys(KINDS, 0)
        for key in self._cache.iterkeys():
            kind = str(key).split(":", 1)[0]
            by_kind[kind] = by_kind.get(kind, 0) + 1
        return CacheInfo(
            str(self.directory),
            sum(by_kind.values()),
            int(self._cache.volume()),
            self.size_limit,
            by_kind,
        )

    def clear(self, kind: str | None = None) -> int:
        """Remove every entry (or those of one ``kind``); returns how many were removed.

        Raises:
            ConfigError: For an unknown kind.
        """
        if kind is None:
            return int(self._cache.clear(retry=True))
        if kind not in KINDS:
            raise ConfigError(f"unknown cache kind {kind!r}; known: {', '.join(KINDS)}")
        return int(self._cache.evict(kind, retry=True))

    def close(self) -> None:
        """Close the SQLite connections (reopened on next use)."""
        self._cache.close()


@contextlib.contextmanager
def _opening(directory: Path) -> Iterator[None]:
    """Serialise opening the cache across processes (an OS file lock).

    Opening writes settings and creates the tag index; SQLite may refuse such schema
    writes from several processes starting at once ("database is locked") instead of
    waiting, so openers take turns. Reads and writes afterwards need no such lock.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock
        yield
        return
    with (directory / "open.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


_SHARED: dict[tuple[int, str], DiskCache] = {}
_SHARED_LOCK = threading.Lock()


def shared_cache(directory: str | os.PathLike[str] | None = None) -> DiskCache | None:
    """The process's cache for ``directory`` (one per process and folder).

    ``None`` when caching is disabled (``VIDEO_ENV_CACHE=off``).
    Worker processes each open their own connection to the same folder; SQLite's locking
    makes concurrent writers safe.
    """
    if not caching_enabled():
        return None
    path = str(Path(directory) if directory is not None else default_directory())
    key = (os.getpid(), path)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = DiskCache(path)
        return _SHARED[key]


#: How a backend is told which cache to use: a cache, ``"shared"`` or ``None`` (none).
CacheArg = DiskCache | str | None


def resolve_cache(cache: CacheArg) -> DiskCache | None:
    """``"shared"`` → :func:`shared_cache`; a :class:`DiskCache` or ``None`` as given.

    Raises:
        ConfigError: For any other string.
    """
    if isinstance(cache, str):
        if cache != "shared":
            raise ConfigError(f"cache must be a DiskCache, 'shared' or None, got {cache!r}")
        return shared_cache()
    return cache
