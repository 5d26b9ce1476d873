"""A cache of a VLM vision tower's features, keyed by the frames' content.

VideoScout shows the same frames many times: a rewatched window, the first turn that all
rollouts of a DAPO group share, and each training turn's rollout, reference and policy
passes. :func:`install_vision_cache` makes a Qwen2-VL / Qwen2.5-VL tower encode each frame
batch once: its forward splits the pixel patches per image or video, looks each up by

- the SHA-256 of the patches' bytes (the processor's output: the pixels as resized and
  normalised, so the processor's settings are part of the key) with their grid
  ``(t, h, w)`` and dtype, and
- the tower's weights: the digest of its frozen weights (two models loaded from one
  checkpoint — the policy and its reference — share entries), or, for a tower that
  trains, the tower itself at its current parameter versions (an optimiser step makes
  new entries),

and encodes only the misses, in one call of the tower's own forward.

What is cached is the output of the tower's *blocks*, before the patch merger (in the
patches' own order, grouped by merge unit); the merger runs on every call. So a tower
whose blocks are frozen and whose merger trains (``freeze_vision``) reuses its blocks'
work in the policy's forward with gradients too, and the merger still gets its gradient.
A tower whose blocks train is bypassed while gradients are on (their outputs must carry
the graph); asking for the tower's attentions or hidden states bypasses the cache too.

The cache is bounded in bytes (least recently used entries go first). One cache may be
installed on several models (the policy and its reference).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from video_env.errors import ConfigError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "VisionCacheStats",
    "VisionFeatureCache",
    "install_vision_cache",
    "vision_tower",
]

#: The default bound: 512 MiB of cached block outputs.
DEFAULT_MAX_BYTES = 512 * 2**20
_MERGER = "merger"


@dataclass(frozen=True)
class VisionCacheStats:
    """What a cache did: lookups that hit, that missed, entries and bytes held."""

    hits: int
    misses: int
    entries: int
    bytes: int


class VisionFeatureCache:
    """A least-recently-used store of vision block outputs, bounded in bytes.

    Args:
        max_bytes: The most bytes of tensors held (an entry larger than this is not kept).

    Raises:
        ConfigError: If ``max_bytes`` is below 1.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 1:
            raise ConfigError(f"max_bytes must be >= 1, got {max_bytes}")
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._bytes = 0
        self._hits = 0
        self._misses = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> Any | None:
        """The tensor stored under ``key`` (now the most recent), or ``None``."""
        with self._lock:
            value = self._entries.get(key)
            if value is None:
                self._misses += 1
                return None
            self._entries.move_to_end(key)
            self._hits += 1
            return value

    def put(self, key: tuple[Any, ...], value: Any) -> None:
        """Store ``value`` under ``key``, dropping the least recent entries past the bound."""
        size = int(value.numel() * value.element_size())
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= int(old.numel() * old.element_size())
            self._entries[key] = value
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= int(dropped.numel() * dropped.element_size())

    def clear(self) -> None:
        """Drop every entry (the counts stay)."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    @property
    def stats(self) -> VisionCacheStats:
        """Hits, misses, entries and bytes so far."""
        with self._lock:
            return VisionCacheStats(self._hits, self._misses, len(self._entries), self._bytes)


def vision_tower(model: Any) -> Any | None:
    """The Qwen2-VL-style vision tower of ``model`` (one with a patch merger), or ``None``."""
    inner = getattr(model, "model", model)
    tower = getattr(inner, "visual", None)
    if tower is None or not hasattr(tower, _MERGER) or not hasattr(tower, "spatial_merge_size"):
        return None
    return tower


def install_vision_cache(model: Any, cache: VisionFeatureCache | None = None) -> Any | None:
    """Route ``model``'s vision tower through ``cache`` (a new one if None).

    Installing again replaces the cache. A model without a Qwen2-VL-style tower is left
    as it is.

    Returns:
        The cache, or ``None`` when the model has no tower it can serve.
    """
    tower = vision_tower(model)
    if tower is None:
        return None
    cache = cache if cache is not None else VisionFeatureCache()
    original = type(tower).forward.__get__(tower)
    state = _TowerState(tower, original, cache)
    tower.forward = state.forward
    tower._video_env_vision_cache = cache
    return cache


def uninstall_vision_cache(model: Any) -> None:
    """Give ``model``'s tower back its own forward (no-op without a cache)."""
    tower = vision_tower(model)
    if tower is not None and "forward" in vars(tower):
        del tower.forward
        tower.__dict__.pop("_video_env_vision_cache", None)


class _Grouping:
    """Stands in for the merger: the block outputs, grouped by merge unit, unmerged."""

    def __init__(self, unit: int) -> None:
        self.unit = unit

    def __call__(self, hidden: Any) -> Any:
        return hidden.reshape(-1, self.unit * hidden.shape[-1])


class _TowerState:
    """The cached forward of one tower, and the digest of its frozen weights."""

    def __init__(self, tower: Any, original: Callable[..., Any], cache: VisionFeatureCache):
        self.tower = tower
        self.original = original
        self.cache = cache
        self._digest: tuple[int, str] | None = None

    def forward(self, hidden_states: Any, grid_thw: Any, **kwargs: Any) -> Any:
        import torch

        trunk = [p for n, p in self.tower.named_parameters() if not n.startswith(_MERGER)]
        trains = any(p.requires_grad for p in trunk)
        asks_more = any(v for k, v in kwargs.items() if k.startswith("output_"))
        if asks_more or (trains and torch.is_grad_enabled()):
            return self.original(hidden_states, grid_thw, **kwargs)
        weights = self._weights_key(trunk, trains)
        unit = int(self.tower.spatial_merge_size) ** 2
        sizes = [int(n) for n in grid_thw.prod(-1).tolist()]
        chunks = hidden_states.split(sizes)
        keys = [
            (weights, _digest(chunk), tuple(int(v) for v in row), str(chunk.dtype))
            for chunk, row in zip(chunks, grid_thw.tolist(), strict=True)
        ]
        found = [self.cache.get(key) for key in keys]
        missing = [i for i, value in enumerate(found) if value is None]
        if missing:
            encoded = self._blocks(
                torch.cat([chunks[i] for i in missing]), grid_thw[missing], kwargs
            )
            parts = encoded.split([sizes[i] // unit for i in missing])
            for i, value in zip(missing, parts, strict=True):
                with torch.inference_mode(False):  # usable later by passes with gradients
                    kept = value.detach().clone()
                self.cache.put(keys[i], kept)
                found[i] = kept
        grouped = torch.cat([value for value in found if value is not None])
        merged = self.tower.merger(grouped.reshape(-1, grouped.shape[-1] // unit))
        from transformers.modeling_outputs import BaseModelOutputWithPooling

        return BaseModelOutputWithPooling(last_hidden_state=grouped, pooler_output=merged)

    def _blocks(self, hidden_states: Any, grid_thw: Any, kwargs: dict[str, Any]) -> Any:
        """The blocks' outputs of the tower's own forward, in patch order, by merge unit."""
        import torch

        merger = self.tower.merger
        unit = int(self.tower.spatial_merge_size) ** 2
        self.tower._modules.pop(_MERGER)
        object.__setattr__(self.tower, _MERGER, _Grouping(unit))
        try:
            with torch.no_grad():
                out = self.original(hidden_states, grid_thw, **kwargs)
        finally:
            del self.tower.__dict__[_MERGER]
            self.tower._modules[_MERGER] = merger
        return out.pooler_output

    def _weights_key(self, trunk: list[Any], trains: bool) -> tuple[Any, ...]:
        version = sum(int(p._version) for p in trunk)
        if trains:
            return ("training", id(self.tower), version)
        if self._digest is None or self._digest[0] != version:
            digest = hashlib.sha256()
            for param in trunk:
                digest.update(_bytes(param.detach()))
            self._digest = (version, digest.hexdigest())
        return ("frozen", self._digest[1])


def _bytes(tensor: Any) -> memoryview:
    flat = tensor.contiguous().reshape(-1).cpu()
    return memoryview(flat.view(__import__("torch").uint8).numpy())


def _digest(tensor: Any) -> str:
    return hashlib.sha256(_bytes(tensor)).hexdigest()
