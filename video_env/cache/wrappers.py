"""Wrappers that cache any VLM or captioner on disk (see :mod:`video_env.cache.store`).

``CachedVLM(backend)`` answers from the cache when the same question was asked about the
same frames (video fingerprint, timestamps, size) of the same backend ``config``;
``CachedCaptioner(backend)`` does the same for captions (with ``max_tokens``). The backend
must have a JSON-serialisable ``config`` naming everything that changes its outputs
(model, dtype, pixel budgets, prompt, generation settings, confidence rule).

Each wrapper keeps its own ``usage``: one call and the frames it looked at per request,
hit or miss, so an episode's record does not depend on what ran before it (the cache
saves time, not recorded perception). The wrapped backend's own ``usage`` counts only
what it really computed (tokens and money included). ``hits`` and ``misses`` count the
wrapper's lookups. Wrappers are cheap: a benchmark gives each worker thread its own, all
sharing one loaded model and one disk cache.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from video_env.backends.base import VLM, Answer, Captioner, FrameBatch
from video_env.cache.fingerprint import video_fingerprint
from video_env.cache.store import CacheArg, DiskCache, cache_key, resolve_cache
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost

#: Decimals of timestamps in keys (1 ms: finer than any frame interval).
TIME_DECIMALS = 3


def backend_config(backend: object) -> dict[str, Any]:
    """The backend's ``config`` (required to cache it).

    Raises:
        ConfigError: If the backend has no ``config`` dict, or is simulated (simulated
            sensors draw per episode seed and must not be cached).
    """
    if getattr(backend, "simulated", False):
        raise ConfigError(
            f"{getattr(backend, 'name', backend)!r} is simulated: its readings depend on the "
            "episode seed and are not cached"
        )
    config = getattr(backend, "config", None)
    if not isinstance(config, dict):
        raise ConfigError(
            f"cannot cache {getattr(backend, 'name', backend)!r}: it has no `config` dict "
            "naming what changes its outputs"
        )
    return config


def frames_key(frames: FrameBatch) -> dict[str, Any]:
    """The part of a key that identifies frames: video fingerprint, timestamps, size."""
    return {
        "video": video_fingerprint(frames.video),
        "times": [round(float(t), TIME_DECIMALS) for t in frames.times],
        "size": [frames.size.width, frames.size.height],
    }


class _Cached:
    """Shared machinery of the wrappers."""

    simulated = False

    def __init__(self, backend: Any, cache: CacheArg = "shared") -> None:
        self.backend = backend
        self.config = backend_config(backend)
        self.name = str(getattr(backend, "name", type(backend).__name__))
        #: Labels of the wrapped model's results (read by Perception).
        self.random_weights = bool(getattr(backend, "random_weights", False))
        self.pixel_vlm = bool(getattr(backend, "pixel_vlm", False))
        self.cache: DiskCache | None = resolve_cache(cache)
        self.usage = Cost()
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    def _lookup(self, key: str) -> Any:
        value = self.cache.get(key) if self.cache is not None else None
        with self._lock:
            if value is None:
                self.misses += 1
            else:
                self.hits += 1
        return value

    def _store(self, key: str, value: Any) -> None:
        if self.cache is not None:
            self.cache.set(key, value)

    def _count(self, cost: Cost) -> None:
        with self._lock:
            self.usage = self.usage + cost


class CachedVLM(_Cached):
    """A :class:`~video_env.backends.base.VLM` whose answers are cached on disk.

    Args:
        backend: The VLM (with a ``config``).
        cache: A :class:`DiskCache`, ``"shared"`` (the process's cache, or none if caching
            is disabled) or ``None`` (no caching: a pass-through with its own usage).

    Raises:
        ConfigError: If the backend cannot be cached (see :func:`backend_config`).
    """

    backend: VLM

    def answer(
        self, frames: FrameBatch, question: str, options: Sequence[str] | None = None
    ) -> Answer:
        """The backend's answer, from the cache when it was computed before."""
        return self.answer_batch([frames], question, options)[0]

    def answer_batch(
        self, batches: Sequence[FrameBatch], question: str, options: Sequence[str] | None = None
    ) -> list[Answer]:
        """Answers for several windows; the cache misses go to the backend together.

        A backend with its own ``answer_batch`` (one forward pass for several windows)
        gets all the misses in one call; otherwise they are answered one by one.
        """
        keys = [self._answer_key(frames, question, options) for frames in batches]
        found = [self._lookup(key) for key in keys]
        missing = [k for k, answer in enumerate(found) if not isinstance(answer, Answer)]
        if missing:
            todo = [batches[k] for k in missing]
            batched = getattr(self.backend, "answer_batch", None)
            if callable(batched) and len(todo) > 1:
                computed = list(batched(todo, question, options))
            else:
                computed = [self.backend.answer(frames, question, options) for frames in todo]
            for k, answer in zip(missing, computed, strict=True):
                self._store(keys[k], answer)
                found[k] = answer
        answers: list[Answer] = found
        for frames, answer in zip(batches, answers, strict=True):
            self._count(Cost(vlm_calls=1, frames=len(frames), visual_tokens=answer.n_visual_tokens))
        return answers

    def _answer_key(self, frames: FrameBatch, question: str, options: Sequence[str] | None) -> str:
        parts = {
            **frames_key(frames),
            "backend": self.config,
            "question": question,
            "options": list(options) if options is not None else None,
        }
        return cache_key("vlm", parts)


class CachedCaptioner(_Cached):
    """A :class:`~video_env.backends.base.Captioner` whose captions are cached on disk.

    Args:
        backend: The captioner (with a ``config``).
        cache: As for :class:`CachedVLM`.

    Raises:
        ConfigError: If the backend cannot be cached (see :func:`backend_config`).
    """

    backend: Captioner

    def caption(self, frames: FrameBatch, max_tokens: int = 64, style: str = "light") -> str:
        """The backend's caption, from the cache when it was computed before."""
        parts = {**frames_key(frames), "backend": self.config, "max_tokens": max_tokens}
        if style != "light":  # light captions keep their earlier keys
            parts["style"] = style
        key = cache_key("caption", parts)
        text = self._lookup(key)
        if not isinstance(text, str):
            # light captions are asked as before styles existed, so captioners written
            # against the older protocol (no ``style``) keep working for them
            extra = {} if style == "light" else {"style": style}
            text = self.backend.caption(frames, max_tokens, **extra)
            self._store(key, text)
        self._count(Cost(caption_calls=1, frames=len(frames)))
        return text
