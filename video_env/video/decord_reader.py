"""Frame reader on decord 0.6.0 (the default decoder: exact and fast batched seeks)."""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

from video_env._optional import require
from video_env.errors import VideoDecodeError
from video_env.video.base import FrameArray, Size
from video_env.video.cache import DEFAULT_CACHE_BYTES
from video_env.video.indexed import IndexedVideoReader


class DecordReader(IndexedVideoReader):
    """Reads frames with ``decord.VideoReader.get_batch``.

    Args:
        path: The video file.
        cache_bytes: Byte budget of the frame cache (``0`` disables it).
        num_threads: Decoder threads (``0``: decord's default).

    Raises:
        VideoDecodeError: If the file is missing, empty or cannot be opened.
        BackendNotInstalled: If decord is not installed on this platform.
    """

    decoder = "decord"

    def __init__(
        self, path: str, cache_bytes: int = DEFAULT_CACHE_BYTES, num_threads: int = 0
    ) -> None:
        super().__init__(path, cache_bytes)
        decord = require("decord", "core", "the decord video decoder")
        # decord's own DECORDError is a plain Exception: truncated files, audio-only files
        # and corrupt data raise it from open, get_frame_timestamp and get_batch alike
        self._errors: tuple[type[BaseException], ...] = (
            RuntimeError, OSError, ValueError, IndexError, getattr(decord, "DECORDError", OSError)
        )  # fmt: skip
        try:
            self._vr = decord.VideoReader(path, num_threads=num_threads)
            n = len(self._vr)
            if n == 0:
                raise VideoDecodeError(path, "the video stream has no frames")
            stamps = np.asarray(self._vr.get_frame_timestamp(np.arange(n)), dtype=np.float64)
            height, width = self._vr[0].shape[:2]
            self._vr.seek(0)
        except VideoDecodeError:
            self._vr = None
            raise
        except self._errors as exc:
            self._vr = None
            raise VideoDecodeError(path, _reason(exc)) from exc
        self._starts = stamps[:, 0] - stamps[0, 0]
        self._duration = float(stamps[-1, 1] - stamps[0, 0])
        self._fps = float(self._vr.get_avg_fps())
        self._size = Size(int(width), int(height))

    def _decode(self, indices: npt.NDArray[np.int64]) -> FrameArray:
        try:
            batch: FrameArray = self._vr.get_batch(indices.tolist()).asnumpy()
        except self._errors as exc:
            raise VideoDecodeError(self._path, _reason(exc)) from exc
        return batch

    def close(self) -> None:
        """Release the decoder and the cache (idempotent)."""
        super().close()
        self._vr = None


def _reason(exc: BaseException) -> str:
    """The message of a decord error without its time stamp and source location."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()] or [repr(exc)]
    line = re.sub(r"^(\[[\d:]+\]\s*\S+:\d+:\s*)+", "", lines[0])
    return f"decord: {line or type(exc).__name__}"[:300]
