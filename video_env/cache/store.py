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

**Data only**: values are stored as JSON or ``.npy`` bytes
(:mod:`video_env.cache.codec`), and the folder's diskcache ``Disk`` refuses to unpickle
anything, keys included, so a value planted by someone with write access never runs; it
is a miss, logged once. A folder owned by another user or writable by others is refused
(:class:`UnsafeCacheFolder`); :func:`shared_cache` then runs without the cache and says
so once. A database that breaks while in use (truncated, overwritten, read-only, locked
past the timeout) turns the cache off for the process with one warning; results are the
same, only recomputed. A folder made read-only is read and never written; a database
damaged before opening is :class:`~video_env.cache.database.CacheDamaged`
(:mod:`video_env.cache.database`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import sqlite3
import stat
import threading
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from video_env import env_vars
from video_env._optional import require
from video_env.cache.codec import CacheFormatError, decode, encode
from video_env.cache.database import (
    CacheDamaged,
    ReadOnlyIndex,
    damage_reported,
    is_read_only,
)
from video_env.errors import ConfigError

log = logging.getLogger(__name__)

#: Kinds of cached values (namespaces and tags).
KINDS = ("caption", "vlm", "clip", "judge")

#: Default size cap in gigabytes.
DEFAULT_SIZE_GB = 8.0

_MISSING = object()


class UnsafeCacheFolder(ConfigError):
    """A cache folder that someone else could write to (and so plant values in)."""


class CacheWarning(UserWarning):
    """The cache is off or an entry was unreadable; results are recomputed."""


_WARNED: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, CacheWarning, stacklevel=3)


def check_folder(directory: Path) -> None:
    """Refuse a cache folder owned by another user or writable by group or others.

    Raises:
        UnsafeCacheFolder: In one line naming the folder and the fix.
    """
    info = os.stat(directory)
    getuid = getattr(os, "getuid", None)
    if getuid is not None and info.st_uid != getuid():
        raise UnsafeCacheFolder(
            f"refusing the cache folder {directory}: it is owned by another user (uid "
            f"{info.st_uid}); set VIDEO_ENV_CACHE_DIR to a folder of your own"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeCacheFolder(
            f"refusing the cache folder {directory}: it is writable by other users (mode "
            f"{stat.S_IMODE(info.st_mode):o}); run `chmod go-w {directory}` or set "
            "VIDEO_ENV_CACHE_DIR to a folder of your own"
        )


@functools.lru_cache(maxsize=1)
def _data_only_disk() -> type:
    """A diskcache ``Disk`` that stores bytes and never unpickles a key or a value."""
    diskcache = require("diskcache", "models", "the disk cache of model outputs")

    class DataOnlyDisk(diskcache.Disk):  # type: ignore[misc, name-defined]
        def get(self, key: Any, raw: bool) -> Any:
            if not raw:  # a pickled key: not written by this library
                raise CacheFormatError("a pickled key in the cache (refused)")
            return super().get(key, raw)

        def store(self, value: Any, read: bool, key: Any = diskcache.core.UNKNOWN) -> Any:
            if not isinstance(value, bytes):
                raise TypeError("the data-only cache stores bytes")
            return super().store(value, read, key=key)

        def fetch(self, mode: int, filename: Any, value: Any, read: bool) -> Any:
            if mode not in (diskcache.core.MODE_RAW, diskcache.core.MODE_BINARY):
                raise CacheFormatError(f"an entry of diskcache mode {mode} (refused)")
            return super().fetch(mode, filename, value, read)

    return DataOnlyDisk


#: Failures of a cache database in use: the cache is turned off, the run goes on.
_BROKEN = (sqlite3.Error, OSError)


def default_directory() -> Path:
    """``$VIDEO_ENV_CACHE_DIR`` or ``~/.cache/video-env``."""
    configured = env_vars.CACHE_DIR.get()
    if configured:
        return Path(configured).expanduser()
    base = env_vars.XDG_CACHE_HOME.get() or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "video-env"


def default_size_limit() -> int:
    """The size cap in bytes (``$VIDEO_ENV_CACHE_SIZE_GB``, default 8 GB).

    Raises:
        ConfigError: If the variable is not a positive number.
    """
    text = env_vars.CACHE_SIZE_GB.get() or str(DEFAULT_SIZE_GB)
    try:
        gigabytes = float(text)
    except ValueError:
        raise ConfigError(f"VIDEO_ENV_CACHE_SIZE_GB must be a number, got {text!r}") from None
    if not gigabytes > 0:
        raise ConfigError(f"VIDEO_ENV_CACHE_SIZE_GB must be > 0, got {text!r}")
    return int(gigabytes * 1e9)


def caching_enabled() -> bool:
    """False when ``VIDEO_ENV_CACHE`` is ``off``, ``0`` or ``false``."""
    return (env_vars.CACHE.get() or "on").strip().lower() not in ("off", "0", "false")


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
    read_only: bool = False


class DiskCache:
    """A size-capped, process-safe disk cache of backend results.

    Args:
        directory: Where the cache lives (default: :func:`default_directory`); created
            with mode 0700 if missing.
        size_limit: Byte cap (default: :func:`default_size_limit`).

    Raises:
        BackendNotInstalled: If ``diskcache`` is not installed.
        UnsafeCacheFolder: If the folder is another user's or writable by others.
        CacheDamaged: If its database is damaged (``video-env cache clear`` removes it).

    A database this process may not write (a read-only folder) is read, never written:
    ``read_only`` is then true, and :meth:`set` stores nothing.
    """

    def __init__(
        self, directory: str | os.PathLike[str] | None = None, size_limit: int | None = None
    ):
        diskcache = require("diskcache", "models", "the disk cache of model outputs")
        self.directory = Path(directory) if directory is not None else default_directory()
        self.size_limit = size_limit if size_limit is not None else default_size_limit()
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        check_folder(self.directory)
        self.read_only = is_read_only(self.directory)
        self._cache: Any
        with damage_reported(self.directory):
            if self.read_only:  # diskcache writes its settings on opening: read it ourselves
                self._cache = ReadOnlyIndex(self.directory, _data_only_disk())
            else:
                with _opening(self.directory):
                    self._cache = diskcache.Cache(
                        str(self.directory),
                        size_limit=self.size_limit,
                        tag_index=True,
                        timeout=60,
                        disk=_data_only_disk(),
                    )
        self.hits = 0
        self.misses = 0
        self.broken: str | None = None  # why the cache was turned off, if it was

    def get(self, key: str) -> Any:
        """The value stored under ``key``, or ``None`` (a miss).

        An entry this library did not write (a planted pickle, a damaged file) is a
        miss, logged once; a database that fails turns the cache off (one warning).
        """
        value: Any = _MISSING
        if self.broken is None:
            try:
                data = self._read(key)
                if data is not _MISSING:
                    value = decode(data)
            except CacheFormatError as exc:
                _warn_once(f"unreadable cache entry in {self.directory} ({exc}); recomputed")
            except _BROKEN as exc:
                self._turn_off(exc)
        if value is _MISSING:
            self.misses += 1
            return None
        self.hits += 1
        return value

    def _read(self, key: str) -> Any:
        return self._cache.get(key, default=_MISSING, retry=True)

    def set(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` (tagged with the key's kind).

        Raises:
            TypeError: If ``value`` is not data (see :mod:`video_env.cache.codec`).
        """
        data = encode(value)
        if self.broken is not None or self.read_only:
            return
        try:
            self._cache.set(key, data, tag=key.split(":", 1)[0], retry=True)
        except _BROKEN as exc:
            self._turn_off(exc)

    def _turn_off(self, exc: BaseException) -> None:
        self.broken = f"{type(exc).__name__}: {exc}"
        _warn_once(
            f"the cache in {self.directory} failed ({self.broken}); running without it "
            "(results are the same, recomputed)"
        )

    def __contains__(self, key: str) -> bool:
        return self.broken is None and key in self._cache

    def info(self) -> CacheInfo:
        """Entries, bytes on disk and entries per kind."""
        by_kind = dict.fromkeys(KINDS, 0)
        with damage_reported(self.directory):
            # counted by tag in SQL: iterating keys would unpickle a planted non-text key
            rows = self._cache._sql("SELECT tag, COUNT(*) FROM Cache GROUP BY tag").fetchall()
            volume = int(self._cache.volume())
        for tag, count in rows:
            by_kind[str(tag)] = by_kind.get(str(tag), 0) + int(count)
        return CacheInfo(str(self.directory), sum(by_kind.values()), volume, self.size_limit,
                         by_kind, self.read_only)  # fmt: skip

    def clear(self, kind: str | None = None) -> int:
        """Remove every entry (or those of one ``kind``); returns how many were removed.

        Raises:
            ConfigError: For an unknown kind, or a read-only cache.
            CacheDamaged: If the database is damaged.
        """
        if kind is not None and kind not in KINDS:
            raise ConfigError(f"unknown cache kind {kind!r}; known: {', '.join(KINDS)}")
        if self.read_only:
            raise ConfigError(
                f"the cache in {self.directory} is read-only; make it writable (`chmod -R u+w "
                f"{self.directory}`) to clear it"
            )
        with damage_reported(self.directory):
            if kind is None:
                return int(self._cache.clear(retry=True))
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


_SHARED: dict[tuple[int, str], DiskCache | None] = {}
_SHARED_LOCK = threading.Lock()


def shared_cache(directory: str | os.PathLike[str] | None = None) -> DiskCache | None:
    """The process's cache for ``directory`` (one per process and folder).

    ``None`` when caching is disabled (``VIDEO_ENV_CACHE=off``).
    Worker processes each open their own connection to the same folder; SQLite's locking
    makes concurrent writers safe.
    A folder that is unsafe (see :func:`check_folder`) or cannot be opened (a damaged
    database, no permission) means no cache: one warning says so, and the run goes on.
    """
    if not caching_enabled():
        return None
    path = str(Path(directory) if directory is not None else default_directory())
    key = (os.getpid(), path)
    with _SHARED_LOCK:
        if key not in _SHARED:
            try:
                _SHARED[key] = DiskCache(path)
            except (UnsafeCacheFolder, CacheDamaged, *_BROKEN) as exc:
                _warn_once(f"{exc}; running without the cache")
                _SHARED[key] = None
            cache = _SHARED[key]
            if cache is not None and cache.read_only:
                _warn_once(f"the cache in {path} is read-only: its values are used, new "
                           "results are not stored")  # fmt: skip
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
