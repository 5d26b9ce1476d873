"""What a path is, in words, when it is not the regular file a caller expected."""

from __future__ import annotations

import stat

__all__ = ["describe_mode"]


def describe_mode(mode: int) -> str | None:
    """What ``mode`` (an ``st_mode``) is, or ``None`` for a regular file.

    One of ``"a folder"``, ``"a FIFO"``, ``"a socket"``, ``"a device"`` or ``"something other
    than a file"``.
    """
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "something other than a file"
