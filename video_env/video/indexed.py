"""Shared logic of file readers: timestamp -> frame index, caching and resizing.

A reader refuses a file whose frames exceed the frame-area cap before anything is decoded
(:mod:`video_env.video.probe`), and decodes a request a few native frames at a time
(:data:`DECODE_CHUNK_BYTES`), resizing each into the output at once: a read holds the
output and one chunk, never every requested frame at the file's size.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from video_env.errors import VideoDecodeError
from video_env.video.base import FrameArray, Size, Times, as_times
from video_env.video.cache import DEFAULT_CACHE_BYTES, FrameCache
from video_env.video.probe import check_frame_size, probe_frame_size
from video_env.video.probe import max_frame_pixels as frame_pixel_cap
from video_env.video.resize import as_resize, resize_frame

#: Bytes of native RGB frames a reader asks its decoder for at once (at least one frame).
DECODE_CHUNK_BYTES = 32 * 2**20


def chunk_frames(size: Size, budget: int | None = None) -> int:
    """How many native frames of ``size`` one decoder call may return within ``budget``.

    Args:
        size: The native frame size.
        budget: Bytes (default: :data:`DECODE_CHUNK_BYTES`).
    """
    limit = DECODE_CHUNK_BYTES if budget is None else budget
    return max(1, limit // max(1, size.pixels * 3))


def nearest_indices(
    starts: npt.NDArray[np.float64], times: npt.NDArray[np.float64]
) -> npt.NDArray[np.int64]:
    """Index of the frame whose start time is nearest to each time (ties: earlier frame).

    Args:
        starts: Sorted presentation times of the frames, in seconds.
        times: Requested times in seconds.
    """
    right = np.clip(np.searchsorted(starts, times, side="left"), 0, len(starts) - 1)
    left = np.clip(right - 1, 0, len(starts) - 1)
    pick_left = np.abs(times - starts[left]) <= np.abs(starts[right] - times)
    return np.where(pick_left, left, right).astype(np.int64)


class IndexedVideoReader(abc.ABC):
    """Base class of readers over a decoded file with known frame presentation times.

    Subclasses set ``_starts`` (sorted frame start times from 0, seconds),
    ``_duration``, ``_fps``, ``_size`` (checked with :meth:`_decoder_size`) and implement
    :meth:`_native_frames`.

    Args:
        path: The video file.
        cache_bytes: Byte budget of the frame cache (``0`` disables it).
        max_frame_pixels: The frame-area cap (default:
            :func:`~video_env.video.probe.max_frame_pixels`).

    Raises:
        VideoDecodeError: If the file is missing, not a file, empty, has no video stream,
            or its header gives frames of unknown size or over the cap.
        ConfigError: If ``max_frame_pixels`` (or its environment variable) is invalid.
    """

    decoder: str = ""

    def __init__(
        self,
        path: str,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        max_frame_pixels: int | None = None,
    ) -> None:
        self._path = path
        self.cache = FrameCache(cache_bytes)
        self._starts: npt.NDArray[np.float64] = np.zeros(0)
        self._duration = 0.0
        self._fps = 0.0
        self._size = Size(0, 0)
        self._closed = False
        self.max_frame_pixels = frame_pixel_cap(max_frame_pixels)
        self.header_size = probe_frame_size(path, self.max_frame_pixels)

    @property
    def name(self) -> str:
        """The file path."""
        return self._path

    @property
    def duration(self) -> float:
        """Length in seconds (end of the last frame)."""
        return self._duration

    @property
    def fps(self) -> float:
        """Average frame rate."""
        return self._fps

    @property
    def num_frames(self) -> int:
        """Number of frames."""
        return len(self._starts)

    @property
    def size(self) -> Size:
        """Native frame size."""
        return self._size

    @property
    def frame_times(self) -> npt.NDArray[np.float64]:
        """Presentation time of every frame, seconds from the first frame."""
        return self._starts

    def indices(self, times: Times) -> npt.NDArray[np.int64]:
        """Frame index returned for each timestamp (validated, see :class:`VideoReader`)."""
        return nearest_indices(self._starts, as_times(times, self._duration, self._path))

    def frames(self, times: Times, size: object = None) -> FrameArray:
        """Frames at the given timestamps as ``uint8[N, H, W, 3]``.

        Args:
            times: Timestamps in seconds within ``[0, duration]``.
            size: ``None`` (native), ``(width, height)`` to fit inside keeping the
                aspect ratio, or a :class:`~video_env.video.resize.Resize`.

        Raises:
            ValueError: If a timestamp is out of range, or the reader is closed.
            VideoDecodeError: If decoding fails.
        """
        if self._closed:
            raise ValueError(f"video reader of {self._path!r} is closed; open the video again")
        resize = as_resize(size)
        target = resize.target(self._size) if resize is not None else self._size
        indices = self.indices(times)
        if len(indices) == 0:
            return np.empty((0, target.height, target.width, 3), dtype=np.uint8)
        unique, inverse = np.unique(indices, return_inverse=True)
        found = [self.cache.get((int(i), target)) for i in unique]
        missing = np.array(
            [i for i, f in zip(unique, found, strict=True) if f is None], dtype=np.int64
        )
        if len(missing):
            batch = self._read(missing, target)
            for i, frame in zip(missing, batch, strict=True):
                self.cache.put((int(i), target), frame)
            if len(missing) == len(indices) and bool(np.all(np.diff(indices) > 0)):
                # all new, already sorted, no repeats: return the batch as decoded
                return batch
            decoded = iter(batch)
            found = [f if f is not None else next(decoded) for f in found]
        return np.stack([found[j] for j in inverse])

    def _decoder_size(self, size: Size) -> Size:
        """Check the size FFmpeg's stream probe found, its decoders capped, against the cap.

        Raises:
            VideoDecodeError: If it is unknown or over the cap (a container that declares
                small frames over a bitstream of large ones).
        """
        check_frame_size(self._path, size, self.max_frame_pixels, "the decoder's probe")
        return size

    def _read(self, indices: npt.NDArray[np.int64], target: Size) -> FrameArray:
        """Decode the frames at sorted, unique indices into ``target``-sized frames.

        Raises:
            VideoDecodeError: If decoding fails, or a frame is not of the stream's size.
        """
        out = np.empty((len(indices), target.height, target.width, 3), dtype=np.uint8)
        expected = (self._size.height, self._size.width, 3)
        count = 0
        for frame in self._native_frames(indices):
            if frame.shape != expected:
                raise VideoDecodeError(
                    self._path,
                    f"the {self.decoder} decoder gave a frame of shape {frame.shape} where "
                    f"the stream's frames are {self._size.width}x{self._size.height}",
                )
            if count < len(out):
                out[count] = resize_frame(frame, target)
            count += 1
        if count != len(out):
            raise VideoDecodeError(
                self._path, f"the {self.decoder} decoder gave {count} frames for {len(out)}"
            )
        return out

    @abc.abstractmethod
    def _native_frames(self, indices: npt.NDArray[np.int64]) -> Iterator[FrameArray]:
        """Decode the frames at sorted, unique indices at native size, one after another.

        An implementation holds at most :func:`chunk_frames` decoded frames at once.
        """

    def close(self) -> None:
        """Release the decoder and the cache (idempotent); :meth:`frames` then refuses."""
        self._closed = True
        self.cache.clear()

    def __enter__(self) -> IndexedVideoReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self._path!r}, {self.num_frames} frames, "
            f"{self._fps:.3f} fps, {self._size.width}x{self._size.height})"
        )
