"""Opening a results folder's files without following links.

A results folder may come from someone else's archive, where ``episodes.jsonl`` or
``.lock`` can be a symbolic link to any file its user can write: a run that followed it
would truncate, "repair" or append to that file. Every file a run reads, writes or
repairs is opened here with ``O_NOFOLLOW`` and checked to be a regular file; a link, a
directory, a FIFO or a device where a run's file should be is a
:class:`~video_env.errors.ConfigError` naming it (``bench`` prints it as one line). A
file a run changes in place (the episode log) must also have no second hard link, since
writing it would change the other name's contents too. Files a run replaces whole
(tables, plots, ``run.json``) are written to a fresh temporary file and renamed over the
old one, which may not be a link either.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from video_env.errors import ConfigError
from video_env.file_kinds import describe_mode

__all__ = ["open_run_file", "read_run_file", "run_file_descriptor", "write_atomic"]

#: ``os.open`` flags of each mode :func:`open_run_file` takes (the lock is ``"lock"``:
#: opened for writing, created if absent, never truncated).
_FLAGS = {
    "rb": os.O_RDONLY,
    "r+b": os.O_RDWR,
    "ab": os.O_WRONLY | os.O_APPEND | os.O_CREAT,
    "lock": os.O_RDWR | os.O_CREAT,
}
#: What ``os.open`` says of a link under ``O_NOFOLLOW`` (ELOOP; EMLINK on FreeBSD), of a
#: directory opened for writing, and of a FIFO or socket that no one reads.
_NOT_REGULAR = frozenset({errno.ELOOP, errno.EMLINK, errno.EISDIR, errno.ENXIO})
#: Added to every open: no link followed, no FIFO waited on, not inherited by workers.
_SAFE = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def _refused(path: Path, what: str) -> ConfigError:
    return ConfigError(
        f"{path} is {what}, not a regular file: a run does not follow or write through it "
        "(a results folder from elsewhere may point at any of your files); remove it, or "
        "write elsewhere with --out DIR"
    )


def _kind(path: Path) -> str:
    """What ``path`` is, in words, without following it."""
    try:
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            return f"a symbolic link (to {os.readlink(path)!r})"
    except OSError:  # gone, or changed, since the open
        return "something other than a file"
    return describe_mode(mode) or "a file"


def run_file_descriptor(path: str | os.PathLike[str], mode: str, in_place: bool = False) -> int:
    """A file descriptor of a run's file, opened without following a link.

    Args:
        path: The file.
        mode: ``"rb"``, ``"r+b"``, ``"ab"`` or ``"lock"`` (read and write, created if
            absent, never truncated).
        in_place: The caller will change the file in place: refuse a file with another
            hard link too.

    Raises:
        ConfigError: If ``path`` is a link, a directory or anything but a regular file.
        FileNotFoundError: If it is absent (modes that do not create it).
    """
    target = Path(path)
    try:
        fd = os.open(target, _FLAGS[mode] | _SAFE, 0o644)
    except OSError as exc:
        if exc.errno in _NOT_REGULAR:
            raise _refused(target, _kind(target)) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refused(target, _kind(target))
        if in_place and info.st_nlink > 1:
            raise ConfigError(
                f"{target} has {info.st_nlink} hard links: a run changes it in place, which "
                "would change every other name of it too; copy it (cp, not cp -l) or write "
                "elsewhere with --out DIR"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def open_run_file(
    path: str | os.PathLike[str], mode: str, in_place: bool = False
) -> Iterator[IO[Any]]:
    """A run's file as a binary file object (see :func:`run_file_descriptor`)."""
    fd = run_file_descriptor(path, mode, in_place)
    with os.fdopen(fd, "r+b" if mode == "lock" else mode) as f:
        yield f


def read_run_file(path: str | os.PathLike[str]) -> bytes | None:
    """The bytes of a run's file, or ``None`` when it is absent.

    Raises:
        ConfigError: If ``path`` is a link or not a regular file.
    """
    try:
        with open_run_file(path, "rb") as f:
            return f.read()  # type: ignore[no-any-return]
    except FileNotFoundError:
        return None


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write a run's file whole or not at all: a fresh temporary file, then a rename.

    The temporary file is created anew (``O_EXCL``: a link left in its place is removed,
    never written through), and the rename replaces ``path`` itself, never a file it
    links to.

    Raises:
        ConfigError: If ``path`` is a link or anything but a regular file.
    """
    target = Path(path)
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise _refused(target, _kind(target))
    tmp = target.with_name(f".{target.name}.tmp")
    if tmp.is_dir() and not tmp.is_symlink():
        raise _refused(tmp, "a directory")
    tmp.unlink(missing_ok=True)  # a link there is removed itself, its target untouched
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _SAFE
    fd = os.open(tmp, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
