"""Video paths from annotations, kept inside the video root."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from video_env.data._files import PathLike
from video_env.data._parsing import brief
from video_env.file_kinds import describe_mode

__all__ = ["RefusedPath", "VideoRoot"]


class RefusedPath(ValueError):
    """A record's video path the root refuses, and whether it leaves the root.

    The record's parsing context turns it into the file's error: a
    :class:`~video_env.data.VideoPathError` (the whole file refused) for a path that leaves
    the root, else a malformed record.

    Args:
        message: What is wrong with the path.
        leaves_root: It is absolute (not allowed), climbs out of the root, or holds bytes
            no file name has.
    """

    def __init__(self, message: str, leaves_root: bool) -> None:
        super().__init__(message)
        self.leaves_root = leaves_root


@dataclass(frozen=True)
class VideoRoot:
    """Turns video paths from annotations into paths inside the video root.

    A path is checked lexically (after :func:`os.path.normpath`, symbolic links are not
    followed: a link the user put inside the root is theirs to trust): one that climbs out
    of the root with ``..`` is refused, and so is an absolute one unless
    ``allow_absolute``. Without a root, paths stay relative (to the working directory) and
    the same rules apply. With a root, a path that names something other than a regular
    file (a folder named ``clip.mp4``, a FIFO, a device) is a malformed record, reported
    at load rather than failing its episode; a missing file is left to the loader's
    missing-video policy.

    Args:
        root: The folder of the videos, or ``None``.
        allow_absolute: Use absolute paths from the annotations as they are.
    """

    root: PathLike | None
    allow_absolute: bool = False

    def path(self, relative: Any) -> str:
        """``root / relative`` for a record's video path.

        Raises:
            RefusedPath: If ``relative`` is not a non-empty string, or (with a root) names
                an existing folder or other non-regular file; ``leaves_root`` if it is
                absolute (without ``allow_absolute``), leaves the root, names the root
                itself, or is no file name.
        """
        if not isinstance(relative, str) or not relative.strip():
            raise RefusedPath(
                f"a video path must be a non-empty string, got {brief(relative)}", False
            )
        if "\0" in relative:
            raise RefusedPath(f"video path {brief(relative)} holds a NUL byte", True)
        try:
            os.fsencode(relative)
        except UnicodeEncodeError:  # a lone surrogate the file system has no bytes for
            raise RefusedPath(
                f"video path {brief(relative)} is no file name (a lone surrogate)", True
            ) from None
        if os.path.isabs(relative):
            if self.allow_absolute:
                return self._regular(relative, os.path.normpath(relative))
            raise RefusedPath(
                f"video path {brief(relative)} is absolute; refused unless absolute paths "
                "are allowed (allow_absolute=True, --allow-absolute-paths)",
                True,
            )
        normal = os.path.normpath(relative)
        if normal in (os.curdir, os.pardir) or normal.startswith(os.pardir + os.sep):
            root = "the working directory" if self.root is None else os.fspath(self.root)
            raise RefusedPath(f"video path {brief(relative)} is not a file inside {root}", True)
        if self.root is None:
            return normal
        return self._regular(relative, os.path.join(os.fspath(self.root), normal))

    def _regular(self, relative: str, path: str) -> str:
        """``path``, unless (with a root) it exists and is not a regular file."""
        kind = None if self.root is None else _not_a_file(path)
        if kind is not None:
            raise RefusedPath(f"video path {brief(relative)} names {kind}, not a video file", False)
        return path


def _not_a_file(path: str) -> str | None:
    """What ``path`` is when it exists and is not a regular file (links followed), else None."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, unreadable folder, name too long: not ours to say
        return None
    return describe_mode(mode)
