"""Frame reader on PyAV (FFmpeg): the fallback decoder, exact by presentation time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from video_env._optional import require
from video_env.errors import VideoDecodeError
from video_env.video.base import FrameArray, Size
from video_env.video.cache import DEFAULT_CACHE_BYTES
from video_env.video.indexed import IndexedVideoReader
from video_env.video.probe import capped_stream_options, open_capped


@dataclass(frozen=True)
class FrameIndex:
    """Every frame's presentation time, from the packets alone (nothing decoded).

    Attributes:
        pts: Presentation times in stream time-base units, sorted.
        keyframes: Indices (into ``pts``) of the keyframes.
        starts: Seconds from the first frame.
        duration: End of the last frame, seconds.
        fps: Average frame rate.
        size: Native frame size.
        stream: The PyAV video stream.
    """

    pts: npt.NDArray[np.int64]
    keyframes: npt.NDArray[np.int64]
    starts: npt.NDArray[np.float64]
    duration: float
    fps: float
    size: Size
    stream: Any


def demux_index(container: Any, path: str) -> FrameIndex:
    """The frame index of ``container``'s first video stream (demuxed, not decoded).

    Raises:
        VideoDecodeError: If there is no video stream or it has no frames.
    """
    if not container.streams.video:
        raise VideoDecodeError(path, "no video stream")
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    pts, keys = [], []
    for packet in container.demux(stream):
        if packet.pts is not None and packet.size > 0:
            pts.append(packet.pts)
            keys.append(packet.is_keyframe)
    if not pts:
        raise VideoDecodeError(path, "the video stream has no frames")
    order = np.argsort(pts, kind="stable")
    sorted_pts = np.asarray(pts, dtype=np.int64)[order]
    base = float(stream.time_base)
    rate = stream.average_rate or stream.guessed_rate
    fps = (
        float(rate) if rate else (len(pts) - 1) / max((sorted_pts[-1] - sorted_pts[0]) * base, 1e-9)
    )
    starts = (sorted_pts - sorted_pts[0]).astype(np.float64) * base
    size = Size(int(stream.codec_context.width), int(stream.codec_context.height))
    keyframes = np.flatnonzero(np.asarray(keys)[order]).astype(np.int64)
    return FrameIndex(
        sorted_pts, keyframes, starts, float(starts[-1] + 1.0 / fps), fps, size, stream
    )


class PyAVReader(IndexedVideoReader):
    """Reads frames with PyAV, seeking to the keyframe before each request.

    On open, the packets are demuxed (not decoded) to learn every frame's presentation
    time and the keyframes. A request decodes forward from the current position when
    no keyframe lies between it and the target, and seeks otherwise. FFmpeg's decoder
    refuses frames over the frame-area cap (its ``max_pixels``), whatever the container
    declares.

    Args:
        path: The video file.
        cache_bytes: Byte budget of the frame cache (``0`` disables it).
        max_frame_pixels: The frame-area cap (default:
            :func:`~video_env.video.probe.max_frame_pixels`).

    Raises:
        VideoDecodeError: If the file is missing, empty, cannot be demuxed, or its frames
            are over the cap.
    """

    decoder = "pyav"

    def __init__(
        self,
        path: str,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        max_frame_pixels: int | None = None,
    ) -> None:
        super().__init__(path, cache_bytes, max_frame_pixels)
        self._av = require("av", "core", "the PyAV video decoder")
        self._container: Any = None
        self._frames_iter: Iterator[Any] | None = None
        self._position = -1  # index of the last frame the iterator yielded
        try:
            self._open()
        except self._av.error.FFmpegError as exc:
            self.close()
            raise VideoDecodeError(path, f"PyAV: {exc}") from exc
        except VideoDecodeError:
            self.close()
            raise

    def _open(self) -> None:
        options = capped_stream_options(self.max_frame_pixels, self.header_size)
        self._container = open_capped(self._av, self._path, self.max_frame_pixels, self.header_size)
        index = demux_index(self._container, self._path)
        self._size = self._decoder_size(index.size)
        self._pts, self._keyframes, self._stream = index.pts, index.keyframes, index.stream
        self._starts, self._duration, self._fps = index.starts, index.duration, index.fps
        self._stream.codec_context.options = dict(options[0])  # the decoding context's cap
        self._frames_iter = None

    def _seek(self, index: int) -> None:
        self._container.seek(int(self._pts[index]), stream=self._stream, backward=True)
        self._frames_iter = self._container.decode(self._stream)
        self._position = -1

    def _needs_seek(self, index: int) -> bool:
        if self._frames_iter is None or self._position < 0 or index <= self._position:
            return True
        nxt = np.searchsorted(self._keyframes, self._position, side="right")
        return bool(nxt < len(self._keyframes) and self._keyframes[nxt] <= index)

    def _decode_one(self, index: int) -> FrameArray:
        if self._needs_seek(index):
            self._seek(index)
        target = self._pts[index]
        assert self._frames_iter is not None  # set by _seek
        for frame in self._frames_iter:
            pts = frame.pts if frame.pts is not None else frame.dts
            if pts is None or pts < target:
                continue
            self._position = int(np.searchsorted(self._pts, pts))
            array: FrameArray = frame.to_ndarray(format="rgb24")
            return array
        raise VideoDecodeError(self._path, f"frame {index} could not be decoded")

    def _native_frames(self, indices: npt.NDArray[np.int64]) -> Iterator[FrameArray]:
        for index in indices:
            try:
                frame = self._decode_one(int(index))
            except self._av.error.FFmpegError as exc:
                self._frames_iter = None
                raise VideoDecodeError(self._path, f"PyAV: {exc}") from exc
            yield frame

    def close(self) -> None:
        """Release the container and the cache (idempotent)."""
        super().close()
        if self._container is not None:
            self._container.close()
            self._container = None
        self._frames_iter = None
