"""A DAPO run's speed settings applied: torch threads and the shared vision features cache.

:func:`speed_up` sets torch's thread count for the machine's free cores
(:func:`~video_env.backends.torch_threads.apply_threads`: ``VIDEO_ENV_TORCH_THREADS``
overrides it) and installs one :class:`~video_env.backends.vision_cache.VisionFeatureCache`
on the policy and on its reference, so that the rollouts', the reference's and the
policy's passes encode a frame batch once where the tower's blocks are frozen (the
reference's always are; the policy's under ``freeze_vision``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from video_env.backends.torch_threads import apply_threads
from video_env.backends.vision_cache import VisionFeatureCache, install_vision_cache

__all__ = ["RunSpeed", "speed_up"]


@dataclass(frozen=True)
class RunSpeed:
    """What :func:`speed_up` set: torch's threads, and the cache (None when off)."""

    threads: int
    vision_cache: VisionFeatureCache | None


def speed_up(torch: Any, model: Any, reference: Any | None, vision_cache_mb: int) -> RunSpeed:
    """Set the threads; install a cache of ``vision_cache_mb`` MB on both models (0: none)."""
    threads = apply_threads(torch)
    if not vision_cache_mb:
        return RunSpeed(threads, None)
    cache = VisionFeatureCache(vision_cache_mb * 2**20)
    installed = install_vision_cache(model, cache)
    if reference is not None:
        install_vision_cache(reference, cache)
    return RunSpeed(threads, installed)
