"""Disk caches of model outputs shared across policies, runs and worker processes."""

from video_env.cache.fingerprint import video_fingerprint
from video_env.cache.store import (
    KINDS,
    CacheInfo,
    DiskCache,
    cache_key,
    caching_enabled,
    default_directory,
    shared_cache,
)
from video_env.cache.wrappers import CachedCaptioner, CachedVLM, backend_config, frames_key

__all__ = [
    "KINDS",
    "CacheInfo",
    "CachedCaptioner",
    "CachedVLM",
    "DiskCache",
    "backend_config",
    "cache_key",
    "caching_enabled",
    "default_directory",
    "frames_key",
    "shared_cache",
    "video_fingerprint",
]
