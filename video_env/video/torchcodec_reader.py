"""Frame reader on TorchCodec (PyTorch's maintained FFmpeg decoder), exact by presentation time.

TorchCodec needs torch and the system's FFmpeg libraries (Debian: ``apt-get install
ffmpeg``); without them it cannot be imported and :func:`torchcodec_available` is false.
The frame index (every frame's presentation time) comes from demuxing the packets with
PyAV, as the PyAV reader does, so the three readers apply one timestamp rule to the same
times; TorchCodec then decodes the requested frames with exact seeks
(``seek_mode="exact"``: frame ``i`` is the ``i``-th frame in presentation order).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from video_env._optional import is_available, require
from video_env.errors import VideoDecodeError
from video_env.video.base import FrameArray
from video_env.video.cache import DEFAULT_CACHE_BYTES
from video_env.video.indexed import IndexedVideoReader, chunk_frames
from video_env.video.probe import open_capped
from video_env.video.pyav_reader import demux_index

__all__ = ["TorchCodecReader", "torchcodec_available"]


@cache
def torchcodec_available() -> bool:
    """Whether TorchCodec imports (it also needs torch and the FFmpeg shared libraries)."""
    if not is_available("torchcodec"):
        return False
    try:
        importlib.import_module("torchcodec.decoders")
        core = importlib.import_module("torchcodec._core.ops")
    except (ImportError, OSError, RuntimeError):  # FFmpeg's libraries missing or mismatched
        return False
    # TorchCodec >= 0.10 imports without FFmpeg (its image decoders need none) and fails
    # only when a video decoder is made; it records whether its FFmpeg ops loaded
    return bool(getattr(core, "_FFMPEG_AVAILABLE", True))


class TorchCodecReader(IndexedVideoReader):
    """Reads frames with ``torchcodec.decoders.VideoDecoder.get_frames_at``.

    The frame size is checked against the frame-area cap, from the header and from
    FFmpeg's capped probe, before TorchCodec opens the file.

    Args:
        path: The video file.
        cache_bytes: Byte budget of the frame cache (``0`` disables it).
        num_threads: FFmpeg decoding threads (``0``: one per core).
        max_frame_pixels: The frame-area cap (default:
            :func:`~video_env.video.probe.max_frame_pixels`).

    Raises:
        VideoDecodeError: If the file is missing, empty, corrupt, its frames are over the
            cap, or TorchCodec and the packets disagree on the number of frames.
        BackendNotInstalled: If TorchCodec cannot be imported (the ``torchcodec`` extra
            and the system's FFmpeg libraries).
    """

    decoder = "torchcodec"

    def __init__(
        self,
        path: str,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        num_threads: int = 0,
        max_frame_pixels: int | None = None,
    ) -> None:
        super().__init__(path, cache_bytes, max_frame_pixels)
        if not torchcodec_available():
            require("torchcodec.decoders", "torchcodec", "the TorchCodec video decoder")
            raise VideoDecodeError(path, "TorchCodec cannot load the FFmpeg libraries")
        av = require("av", "core", "the frame index of the TorchCodec reader")
        decoders = require("torchcodec.decoders", "torchcodec", "the TorchCodec video decoder")

        self._decoder: Any = None
        try:
            with open_capped(av, path, self.max_frame_pixels, self.header_size) as container:
                index = demux_index(container, path)
            self._size = self._decoder_size(index.size)
            self._decoder = decoders.VideoDecoder(
                path, seek_mode="exact", dimension_order="NHWC", num_ffmpeg_threads=num_threads
            )
            frames = self._decoder.metadata.num_frames
        except av.error.FFmpegError as exc:
            raise VideoDecodeError(path, f"PyAV: {exc}") from exc
        except (RuntimeError, ValueError) as exc:
            raise VideoDecodeError(path, f"torchcodec: {_reason(exc)}") from exc
        if frames != len(index.starts):
            self._decoder = None
            raise VideoDecodeError(
                path, f"torchcodec finds {frames} frames where the packets hold {len(index.starts)}"
            )
        self._starts, self._duration, self._fps = index.starts, index.duration, index.fps

    def _native_frames(self, indices: npt.NDArray[np.int64]) -> Iterator[FrameArray]:
        step = chunk_frames(self._size)
        for start in range(0, len(indices), step):
            try:
                batch = self._decoder.get_frames_at(indices=indices[start : start + step].tolist())
            except (RuntimeError, ValueError, IndexError) as exc:
                raise VideoDecodeError(self._path, f"torchcodec: {_reason(exc)}") from exc
            chunk: FrameArray = batch.data.numpy()
            yield from chunk

    def close(self) -> None:
        """Release the decoder and the cache (idempotent)."""
        super().close()
        self._decoder = None


def _reason(exc: BaseException) -> str:
    line = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), repr(exc))
    return line[:300]
