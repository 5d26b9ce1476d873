"""The disk cache holds data, not code; an unsafe or broken cache never changes results."""

from __future__ import annotations

import os
import pickle
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

diskcache = pytest.importorskip("diskcache")

from video_env.backends.base import Answer, FrameBatch  # noqa: E402
from video_env.cache import (  # noqa: E402
    CachedCaptioner,
    DiskCache,
    cache_key,
    shared_cache,
    store,
)
from video_env.cache.codec import CacheFormatError, decode, encode  # noqa: E402
from video_env.cache.store import CacheWarning, UnsafeCacheFolder  # noqa: E402
from video_env.metrics.cost import Cost  # noqa: E402
from video_env.metrics.judges import Grade  # noqa: E402
from video_env.synth import load_suite  # noqa: E402
from video_env.types import Interval  # noqa: E402


class Payload:
    """Unpickling it runs a shell command that creates ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "_WARNED", set())
    monkeypatch.setattr(store, "_SHARED", {})


def plant(folder: Path, key: Any, value: Any) -> None:
    """Write an entry the way anyone with write access could: diskcache's own pickling."""
    with diskcache.Cache(str(folder)) as raw:
        raw.set(key, value)


def test_a_planted_pickle_never_runs(tmp_path: Path) -> None:
    folder, marker = tmp_path / "cache", tmp_path / "pwned"
    cache = DiskCache(folder)
    key = cache_key("caption", {"a": 1})
    cache.set(key, "a real caption")
    plant(folder, key, Payload(marker))  # a pickled value
    plant(folder, ("tuple", "key"), 1)  # a pickled key
    plant(folder, Payload(marker), 1)  # a key whose unpickling runs code
    with pytest.warns(CacheWarning, match="unreadable cache entry"):
        assert DiskCache(folder).get(key) is None  # a miss, logged
    info = DiskCache(folder).info()  # keys are never unpickled either
    assert info.entries >= 1
    assert not marker.exists()


def test_a_planted_caption_is_recomputed_not_used(tmp_path: Path) -> None:
    folder, marker = tmp_path / "cache", tmp_path / "pwned"

    class Captioner:
        name, simulated, usage = "counting", False, Cost()
        config: dict[str, object] = {"backend": "counting"}  # noqa: RUF012

        def caption(self, frames: FrameBatch, max_tokens: int = 64) -> str:
            return f"clip at {frames.times[0]:.1f}"

    video = load_suite("synth-tiny")[0].video
    frames = FrameBatch.sample(video, Interval(0, 4), 2, (32, 32))
    first = CachedCaptioner(Captioner(), DiskCache(folder))
    expected = first.caption(frames)
    with diskcache.Cache(str(folder)) as raw:
        for key in list(raw):
            raw.set(key, Payload(marker))  # every entry replaced by a payload
    again = CachedCaptioner(Captioner(), DiskCache(folder))
    with pytest.warns(CacheWarning):
        assert again.caption(frames) == expected
    assert again.misses == 1 and not marker.exists()


def test_values_round_trip_as_data() -> None:
    values = ["text", {"correct": True, "score": 4.0}, [1, 2.5, None],
              Answer("B", 0.75, (0.9, 0.8), 12), Grade(True, 4.0)]  # fmt: skip
    for value in values:
        assert decode(encode(value)) == value
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert np.array_equal(decode(encode(array)), array)
    with pytest.raises(TypeError):
        encode(np.array([object()]))
    with pytest.raises(TypeError):
        encode(Payload(Path("x")))
    for bad in (pickle.dumps("x"), b"J" + b"[" * 100_000, b"J{}", b"N" + b"\x93NUMPY",
                b'J{"type": "answer", "value": [1, 2]}', b""):  # fmt: skip
        with pytest.raises(CacheFormatError):
            decode(bad)


def test_a_folder_writable_by_others_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    with pytest.raises(UnsafeCacheFolder, match=f"refusing the cache folder {folder}.*writable"):
        DiskCache(folder)
    with pytest.warns(CacheWarning, match="running without the cache"):
        assert shared_cache(folder) is None


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_a_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o755)
    os.chown(folder, 12345, -1)
    with pytest.raises(UnsafeCacheFolder, match="owned by another user"):
        DiskCache(folder)


def test_a_new_folder_is_private(tmp_path: Path) -> None:
    DiskCache(tmp_path / "new")
    assert (tmp_path / "new").stat().st_mode & 0o077 == 0


def test_an_overwritten_database_means_no_cache_and_one_warning(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    DiskCache(folder).set(cache_key("caption", {"a": 1}), "x")
    (folder / "cache.db").write_bytes(b"not a database" * 100)
    with pytest.warns(CacheWarning, match="running without the cache"):
        assert shared_cache(folder) is None


def test_a_database_damaged_in_use_turns_the_cache_off(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    cache = DiskCache(folder)
    key = cache_key("caption", {"a": 1})
    cache.set(key, "x")
    cache.close()
    with open(folder / "cache.db", "r+b") as handle:  # truncated mid-file
        handle.truncate(1024)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.get(key) is None
        cache.set(key, "y")
        assert cache.get(key) is None
    assert cache.broken is not None
    assert sum(issubclass(w.category, CacheWarning) for w in caught) == 1


def test_a_read_only_database_changes_no_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from video_env.cache import CachedVLM

    class Counting:
        name, simulated, usage = "counting", False, Cost()
        config: dict[str, object] = {"backend": "counting"}  # noqa: RUF012

        def answer(self, frames: FrameBatch, question: str, options: Any = None) -> Answer:
            return Answer(f"{question}@{frames.times[0]:.1f}", 0.5, (0.5,), 7)

    video = load_suite("synth-tiny")[0].video
    batches = [FrameBatch.sample(video, Interval(t, t + 4), 2, (32, 32)) for t in (0, 8, 0)]
    plain = [CachedVLM(Counting(), None).answer(b, "q?") for b in batches]
    cache = DiskCache(tmp_path / "cache")

    def read_only(*_: Any, **__: Any) -> None:  # what SQLite says of a read-only folder
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(cache._cache, "set", read_only)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cached = [CachedVLM(Counting(), cache).answer(b, "q?") for b in batches]
    assert cached == plain
    assert cache.broken and "readonly" in cache.broken
    assert sum(issubclass(w.category, CacheWarning) for w in caught) == 1
