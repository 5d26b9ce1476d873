"""A cache database that is read-only or damaged: reading it, telling so, removing it.

A cache folder its owner made read-only (a shared, pre-filled cache) is read through
:class:`ReadOnlyIndex`: diskcache itself writes its settings whenever it opens a
database, so it cannot open one it may not write. A damaged database (overwritten,
truncated, "file is not a database") is a :class:`CacheDamaged` error naming the fix,
``video-env cache clear``, which removes it with :func:`remove_database`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from video_env.errors import ConfigError

#: diskcache's database file, and the files SQLite keeps beside it.
DATABASE = "cache.db"
_DATABASE_FILES = (DATABASE, f"{DATABASE}-wal", f"{DATABASE}-shm")


class CacheDamaged(ConfigError):
    """The cache database is damaged: ``video-env cache clear`` removes it."""


def is_damaged(exc: BaseException) -> bool:
    """Whether an SQLite error says the file is no sound database (not: locked, read-only)."""
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)


@contextlib.contextmanager
def damage_reported(directory: Path) -> Iterator[None]:
    """Turn an SQLite error that means a damaged database into :class:`CacheDamaged`."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if not is_damaged(exc):
            raise
        raise CacheDamaged(
            f"the cache database {directory / DATABASE} is damaged ({type(exc).__name__}: "
            f"{exc}); `video-env cache clear --dir {directory}` removes it (its values are "
            "then recomputed)"
        ) from None


def is_read_only(directory: Path) -> bool:
    """Whether the folder holds a database this process may read but not write."""
    database = directory / DATABASE
    if not database.exists():
        return False
    return not (os.access(directory, os.W_OK) and os.access(database, os.W_OK))


def remove_database(directory: Path) -> int:
    """Remove the folder's cache database and the value files it indexed.

    Only what diskcache writes is removed (``cache.db`` and its journal files, and
    ``XX/YY/*.val``), whatever else the folder holds. Returns the value files removed.
    """
    for name in _DATABASE_FILES:
        (directory / name).unlink(missing_ok=True)
    values = 0
    for value in directory.glob("[0-9a-f][0-9a-f]/[0-9a-f][0-9a-f]/*.val"):
        value.unlink()
        values += 1
    for inner in sorted(directory.glob("[0-9a-f][0-9a-f]/[0-9a-f][0-9a-f]"), reverse=True):
        with contextlib.suppress(OSError):  # not empty: something diskcache did not write
            inner.rmdir()
            inner.parent.rmdir()
    return values


class ReadOnlyIndex:
    """The read side of a ``diskcache.Cache`` on a database it may not write.

    It opens the database ``immutable`` (SQLite neither locks nor writes it), and looks
    keys up the way diskcache stores them (text keys, raw); values are read by the
    cache's data-only ``Disk``.

    Args:
        directory: The cache folder.
        disk: The ``diskcache.Disk`` class that reads its values.

    Raises:
        sqlite3.DatabaseError: If the file is no cache database.
    """

    def __init__(self, directory: Path, disk: type) -> None:
        self.directory = directory
        self._local = threading.local()
        settings = dict(self._sql("SELECT key, value FROM Settings").fetchall())
        self._disk = disk(str(directory), **{
            key[5:]: value for key, value in settings.items() if key.startswith("disk_")
        })  # fmt: skip

    @property
    def _sql(self) -> Any:
        connection = getattr(self._local, "connection", None)
        if connection is None or getattr(self._local, "pid", None) != os.getpid():
            uri = f"{(self.directory / DATABASE).resolve().as_uri()}?immutable=1"
            connection = sqlite3.connect(uri, uri=True, isolation_level=None)
            self._local.connection, self._local.pid = connection, os.getpid()
        return connection.execute

    def _row(self, key: str) -> Any:
        return self._sql(
            "SELECT mode, filename, value FROM Cache WHERE key = ? AND raw = 1 AND "
            "(expire_time IS NULL OR expire_time > ?)",
            (key, time.time()),
        ).fetchone()

    def get(self, key: str, default: Any = None, retry: bool = False) -> Any:
        """The value stored under ``key``, or ``default``."""
        row = self._row(key)
        if row is None:
            return default
        mode, filename, value = row
        return self._disk.fetch(mode, filename, value, False)

    def __contains__(self, key: str) -> bool:
        return self._row(key) is not None

    def volume(self) -> int:
        """Bytes on disk: the database's pages and the value files."""
        ((pages,),) = self._sql("PRAGMA page_count").fetchall()
        ((page_size,),) = self._sql("PRAGMA page_size").fetchall()
        size = self._sql("SELECT value FROM Settings WHERE key = 'size'").fetchone()
        return int(pages) * int(page_size) + int(size[0] if size else 0)

    def close(self) -> None:
        """Close this thread's connection (reopened on next use)."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None
