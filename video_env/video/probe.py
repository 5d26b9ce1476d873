"""Cheap checks on a video file before a decoder touches it."""

from __future__ import annotations

import os

from video_env.errors import VideoDecodeError


def check_file(path: str) -> None:
    """Raise :class:`VideoDecodeError` if ``path`` is missing, not a file, or empty."""
    if not os.path.exists(path):
        raise VideoDecodeError(path, "file not found")
    if not os.path.isfile(path):
        raise VideoDecodeError(path, "not a regular file")
    if os.path.getsize(path) == 0:
        raise VideoDecodeError(path, "file is empty")
