"""Video paths from annotations, kept inside the video root."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from video_env.data._common import RecordContext, VideoPathError, brief
from video_env.data._files import PathLike


@dataclass(frozen=True)
class VideoRoot:
    """Turns video paths from annotations into paths inside the video root.

    A path is checked lexically (after :func:`os.path.normpath`, symbolic links are not
    followed: a link the user put inside the root is theirs to trust): one that climbs out
    of the root with ``..`` is refused, and so is an absolute one unless
    ``allow_absolute``. Without a root, paths stay relative (to the working directory) and
    the same rules apply.

    Args:
        root: The folder of the videos, or ``None``.
        allow_absolute: Use absolute paths from the annotations as they are.
    """

    root: PathLike | None
    allow_absolute: bool = False

    def path(self, ctx: RecordContext, relative: Any, index: int) -> str:
        """``root / relative`` for a record's video path.

        Raises:
            DatasetError: If ``relative`` is not a non-empty string.
            VideoPathError: If it is absolute (without ``allow_absolute``), leaves the root,
                or names the root itself.
        """
        if not isinstance(relative, str) or not relative.strip():
            raise ctx.error(
                f"a video path must be a non-empty string, got {brief(relative)}", index
            )
        if "\0" in relative:
            raise VideoPathError(ctx.path, f"video path {brief(relative)} holds a NUL byte", index)
        try:
            os.fsencode(relative)
        except UnicodeEncodeError:  # a lone surrogate the file system has no bytes for
            raise VideoPathError(
                ctx.path, f"video path {brief(relative)} is no file name (a lone surrogate)", index
            ) from None
        if os.path.isabs(relative):
            if self.allow_absolute:
                return os.path.normpath(relative)
            raise VideoPathError(
                ctx.path,
                f"video path {brief(relative)} is absolute; refused unless absolute paths "
                "are allowed (allow_absolute=True, --allow-absolute-paths)",
                index,
            )
        normal = os.path.normpath(relative)
        if normal in (os.curdir, os.pardir) or normal.startswith(os.pardir + os.sep):
            root = "the working directory" if self.root is None else os.fspath(self.root)
            raise VideoPathError(
                ctx.path, f"video path {brief(relative)} is not a file inside {root}", index
            )
        return normal if self.root is None else os.path.join(os.fspath(self.root), normal)
