"""A thread-safe LRU cache of decoded frames bounded by bytes."""

from __future__ import annotations

import threading
from collections.abc import Hashable

import numpy as np
from cachetools import LRUCache

from video_env.errors import ConfigError

#: Default byte budget of one reader's frame cache (256 MiB).
DEFAULT_CACHE_BYTES = 256 * 2**20


def _nbytes(frame: np.ndarray) -> int:
    return int(frame.nbytes)


class FrameCache:
    """Least-recently-used frames, evicted once their total size exceeds a byte budget.

    Args:
        max_bytes: The budget; ``0`` disables caching.
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        if max_bytes < 0:
            raise ConfigError(f"cache budget must be >= 0 bytes, got {max_bytes}")
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._lru: LRUCache[Hashable, np.ndarray] | None = (
            LRUCache(maxsize=max_bytes, getsizeof=_nbytes) if max_bytes > 0 else None
        )
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> np.ndarray | None:
        """The cached frame for ``key``, or ``None``."""
        if self._lru is None:
            self.misses += 1
            return None
        with self._lock:
            frame = self._lru.get(key)
        if frame is None:
            self.misses += 1
        else:
            self.hits += 1
        return frame

    def put(self, key: Hashable, frame: np.ndarray) -> None:
        """Store a read-only copy of a frame; frames larger than the budget are skipped."""
        if self._lru is None or frame.nbytes > self.max_bytes:
            return
        frame = frame.copy()
        frame.flags.writeable = False
        with self._lock:
            self._lru[key] = frame

    @property
    def nbytes(self) -> int:
        """Bytes currently held."""
        return int(self._lru.currsize) if self._lru is not None else 0

    def __len__(self) -> int:
        return len(self._lru) if self._lru is not None else 0

    def clear(self) -> None:
        """Drop every frame."""
        if self._lru is not None:
            with self._lock:
                self._lru.clear()
