"""Tile features of the frames the pixel-real roles look at, computed once per frame.

Every answer and caption of the pixel-real VLM and captioner scores texts against the
CLIP features of tiles of the frames it looks at (:func:`video_env.pixel.tiles.tiles`).
Those features depend only on the frame (video, timestamp, size), the tile grid and the
model, not on the question: the 53 light captions of a one-hour video, the windows
FALCONEye evaluates for the MCQ and the open form of one question, the chunks every
Pacing policy reads — all look at the same frames again and again. :class:`TileFeatures`
therefore computes the features of each (frame, grid) once and keeps them in a memory
LRU and in the shared disk cache (kind ``clip``, so every worker process of a bench and
every later run reuses them), keyed by the video's fingerprint (which covers the
renderer's code for synthetic videos), the timestamp, the frame size, the grid and the
CLIP's ``config`` (its weight files' sizes and modification times).

Tiles are cut exactly as :func:`video_env.pixel.tiles.tiles` cuts them (the training
data's tiling), with Pillow crops instead of a numpy copy and a ``fromarray`` per tile;
only the frames with a missing (frame, grid) are rendered, and all their missing tiles
are encoded in one call.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from cachetools import LRUCache
from PIL import Image

from video_env.backends.base import FrameBatch
from video_env.backends.openclip import OpenCLIP
from video_env.cache.fingerprint import video_fingerprint
from video_env.cache.store import DiskCache, cache_key
from video_env.pixel.tiles import INPUT_SIZE, tile_boxes
from video_env.video.base import FrameArray, Size
from video_env.video.resize import Resize

#: (frame, grid) entries kept in memory (~5 KB each with the shipped model).
MEMORY_ENTRIES = 16384
#: Names the tiling in cache keys; change it when the tiling changes.
TILING = "data.tiles: rows of input-aspect tiles, Pillow bilinear to the input size"

Box = tuple[int, int, int, int]


def cut_tiles(frame: FrameArray, boxes: Sequence[Box]) -> list[npt.NDArray[np.uint8]]:
    """The ``boxes`` of ``frame`` resized (bilinear) to the input size.

    Pixel for pixel what :func:`video_env.pixel.tiles.cut_tile` returns for each box
    (tested), with one Pillow image per frame.
    """
    image = Image.fromarray(np.ascontiguousarray(frame))
    size = (INPUT_SIZE.width, INPUT_SIZE.height)
    return [np.asarray(image.crop(box).resize(size, Image.Resampling.BILINEAR)) for box in boxes]


class TileFeatures:
    """Per-(frame, grid) tile features of one CLIP, cached in memory and on disk.

    Args:
        clip: The pixel-real CLIP (its ``encode_images`` encodes the tiles).
        cache: The disk cache (``None``: memory only).
        memory_entries: (frame, grid) entries kept in memory.
    """

    def __init__(
        self, clip: OpenCLIP, cache: DiskCache | None, memory_entries: int = MEMORY_ENTRIES
    ) -> None:
        self.clip = clip
        self.cache = cache
        self._memory: LRUCache[str, npt.NDArray[np.float32]] = LRUCache(memory_entries)
        self._fingerprints: LRUCache[int, tuple[object, str]] = LRUCache(64)
        self._lock = threading.RLock()
        #: (frame, grid) entries whose tiles were encoded here (not found in a cache).
        self.computed = 0
        #: Tiles encoded here.
        self.computed_tiles = 0

    def features(self, frames: FrameBatch, grids: Sequence[int]) -> npt.NDArray[np.float32]:
        """Features of every tile of every frame: per frame, per grid, its boxes in order.

        The rows are in the order of :func:`video_env.pixel.tiles.tiles` on
        ``frames.pixels()``, ``float32[len(frames) * tiles, D]`` (rows L2-normalised).
        """
        if len(frames) == 0:
            return np.zeros((0, self.clip.embed_dim), dtype=np.float32)
        keys = self._keys(frames, grids)
        with self._lock:
            found = {k: v for k in set(keys.values()) if (v := self._get(k)) is not None}
            missing = [(i, g) for (i, g), k in keys.items() if k not in found]
            if missing:
                computed = self._compute(frames, missing)
                for (i, g), value in computed.items():
                    found[keys[(i, g)]] = value
                    self._put(keys[(i, g)], value)
        rows = [found[keys[(i, g)]] for i in range(len(frames)) for g in grids]
        return np.concatenate(rows)

    def _keys(self, frames: FrameBatch, grids: Sequence[int]) -> dict[tuple[int, int], str]:
        base = {
            "video": self._fingerprint(frames),
            "size": [frames.size.width, frames.size.height],
            "backend": self.clip.config,
            "tiling": TILING,
        }
        return {
            (i, g): cache_key("clip", {**base, "time": round(float(t), 3), "grid": g})
            for i, t in enumerate(frames.times)
            for g in grids
        }

    def _fingerprint(self, frames: FrameBatch) -> str:
        """The video's fingerprint (remembered per reader object: hashing it is not free)."""
        entry = self._fingerprints.get(id(frames.video))
        if entry is None or entry[0] is not frames.video:
            entry = (frames.video, video_fingerprint(frames.video))
            self._fingerprints[id(frames.video)] = entry
        return entry[1]

    def _get(self, key: str) -> npt.NDArray[np.float32] | None:
        value = self._memory.get(key)
        if value is None and self.cache is not None:
            stored = self.cache.get(key)
            if isinstance(stored, np.ndarray):
                value = stored
                self._memory[key] = value
        return value

    def _put(self, key: str, value: npt.NDArray[np.float32]) -> None:
        self._memory[key] = value
        if self.cache is not None:
            self.cache.set(key, value)

    def _compute(
        self, frames: FrameBatch, missing: list[tuple[int, int]]
    ) -> dict[tuple[int, int], npt.NDArray[np.float32]]:
        """Render the frames with a missing grid, cut and encode all missing tiles at once."""
        indices = sorted({i for i, _ in missing})
        pixels = self._pixels(frames, indices)
        size = Size(frames.size.width, frames.size.height)
        images: list[npt.NDArray[np.uint8]] = []
        spans: dict[tuple[int, int], tuple[int, int]] = {}
        for i, g in missing:
            boxes = tile_boxes(size, g)
            spans[(i, g)] = (len(images), len(images) + len(boxes))
            images += cut_tiles(pixels[i], boxes)
        encoded = self.clip.encode_images(np.stack(images))
        self.computed += len(missing)
        self.computed_tiles += len(images)
        return {key: encoded[a:b] for key, (a, b) in spans.items()}

    @staticmethod
    def _pixels(frames: FrameBatch, indices: list[int]) -> dict[int, FrameArray]:
        """The frames at ``indices``: the batch's decoded pixels if it has them, else those only."""
        if frames._pixels or len(indices) == len(frames):
            every = frames.pixels()
            return {i: every[i] for i in indices}
        size = Resize.exact(frames.size.width, frames.size.height)
        chosen = frames.video.frames(frames.times[indices], size=size)
        return dict(zip(indices, chosen, strict=True))
