"""The disk cache of model outputs: keys, size cap, concurrent writers, wrappers."""

import concurrent.futures
import multiprocessing
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import policies
from video_env.backends.base import Answer, FrameBatch
from video_env.backends.simulated import SimulatedVLM
from video_env.cache import (
    CachedCaptioner,
    CachedVLM,
    DiskCache,
    cache_key,
    shared_cache,
    video_fingerprint,
)
from video_env.envs.perception import Perception
from video_env.envs.zoom import ZoomEnv
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost
from video_env.synth import load_suite
from video_env.video import open_video, write_video
from video_env.video.testing import coded_frames

pytest.importorskip("diskcache")


class CountingBackend:
    """A deterministic VLM and captioner that counts the calls it really computes."""

    name = "counting"
    simulated = False

    def __init__(self) -> None:
        self.usage = Cost()
        self.calls = 0
        self.config: dict[str, object] = {"backend": "counting", "version": 1}

    def answer(
        self, frames: FrameBatch, question: str, options: Sequence[str] | None = None
    ) -> Answer:
        self.calls += 1
        return Answer(f"{question}@{frames.times[0]:.1f}", 0.5, (0.5,), 7)

    def caption(self, frames: FrameBatch, max_tokens: int = 64, style: str = "light") -> str:
        self.calls += 1
        return f"clip from {frames.times[0]:.1f} s to {frames.times[-1]:.1f} s"


class BatchingBackend(CountingBackend):
    """A counting VLM with its own ``answer_batch`` (one call for several windows)."""

    def __init__(self) -> None:
        super().__init__()
        self.batch_sizes: list[int] = []

    def answer_batch(
        self, batches: Sequence[FrameBatch], question: str, options: Sequence[str] | None = None
    ) -> list[Answer]:
        self.batch_sizes.append(len(batches))
        return [self.answer(frames, question, options) for frames in batches]


def test_cached_vlm_sends_the_misses_of_several_windows_in_one_batch(tmp_path: Path) -> None:
    inner, cache = BatchingBackend(), DiskCache(tmp_path / "c")
    video = load_suite("synth-tiny")[0].video
    windows = [FrameBatch(video, np.array([t, t + 1.0]), video.size) for t in (1.0, 5.0, 9.0)]
    vlm = CachedVLM(inner, cache)
    vlm.answer(windows[1], "what?")  # one window cached beforehand
    answers = vlm.answer_batch(windows, "what?")
    assert [a.text for a in answers] == ["what?@1.0", "what?@5.0", "what?@9.0"]  # in order
    assert inner.batch_sizes == [2]  # the two misses in one batched call
    assert inner.calls == 3
    assert vlm.answer_batch(windows, "what?") == answers and inner.batch_sizes == [2]
    assert vlm.usage.vlm_calls == 7  # every window requested counts, hit or miss


def test_keys_cover_every_part() -> None:
    base = {"video": "v", "times": [1.0], "backend": {"m": 1}}
    assert cache_key("vlm", base) == cache_key("vlm", dict(reversed(base.items())))
    assert cache_key("vlm", base) != cache_key("caption", base)
    assert cache_key("vlm", base) != cache_key("vlm", {**base, "backend": {"m": 2}})
    with pytest.raises(ConfigError, match="unknown cache kind"):
        cache_key("frames", base)


def test_store_info_clear_and_size_cap(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "c", size_limit=200_000)
    cache.set(cache_key("caption", {"a": 1}), "text")
    cache.set(cache_key("judge", {"a": 1}), {"correct": True, "score": 4.0})
    assert cache.get(cache_key("caption", {"a": 1})) == "text"
    assert cache.get(cache_key("caption", {"a": 2})) is None
    assert (cache.hits, cache.misses) == (1, 1)
    info = cache.info()
    assert info.entries == 2 and info.by_kind["caption"] == 1 and info.by_kind["judge"] == 1
    assert cache.clear("judge") == 1 and cache.info().entries == 1
    for i in range(100):  # 100 x 20 kB = 2 MB into a 200 kB cache
        cache.set(cache_key("clip", {"i": i}), np.zeros(5000, dtype=np.float32))
    info = cache.info()
    assert info.bytes <= 400_000 and info.entries < 100
    assert cache.clear() == info.entries and cache.info().entries == 0


def _write_many(folder: str, worker: int) -> int:
    cache = DiskCache(folder)
    for i in range(40):
        cache.set(cache_key("caption", {"worker": worker, "i": i}), f"{worker}-{i}")
        cache.get(cache_key("caption", {"worker": (worker + 1) % 6, "i": i}))
    return worker


def test_concurrent_writer_processes(tmp_path: Path) -> None:
    folder = str(tmp_path / "shared")
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(6, mp_context=context) as pool:
        assert sorted(pool.map(_write_many, [folder] * 6, range(6))) == list(range(6))
    cache = DiskCache(folder)
    assert cache.info().entries == 240
    assert cache.get(cache_key("caption", {"worker": 3, "i": 39})) == "3-39"


def test_shared_cache_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VIDEO_ENV_CACHE_DIR", str(tmp_path / "x"))
    cache = shared_cache()
    assert cache is not None and cache.directory == tmp_path / "x" and shared_cache() is cache
    monkeypatch.setenv("VIDEO_ENV_CACHE", "off")
    assert shared_cache() is None


def test_video_fingerprints(tmp_path: Path) -> None:
    a, b = load_suite("synth-tiny")[:2]
    assert video_fingerprint(a.video) == video_fingerprint(load_suite("synth-tiny")[0].video)
    if a.video is not b.video:
        assert video_fingerprint(a.video) != video_fingerprint(b.video)
    path = tmp_path / "v.mp4"
    write_video(path, coded_frames(10), 10.0)
    with open_video(str(path)) as video:
        first = video_fingerprint(video)
    os.utime(path, ns=(1, 1))
    with open_video(str(path)) as video:
        assert video_fingerprint(video) != first


def test_wrappers_cache_answers_and_captions(tmp_path: Path) -> None:
    inner, cache = CountingBackend(), DiskCache(tmp_path / "c")
    video = load_suite("synth-tiny")[0].video
    frames = FrameBatch(video, np.array([1.0, 2.0]), video.size)
    vlm, captioner = CachedVLM(inner, cache), CachedCaptioner(inner, cache)
    answer = vlm.answer(frames, "what?", ["a", "b"])
    assert vlm.answer(frames, "what?", ["a", "b"]) == answer
    vlm.answer(frames, "what?", ["a", "c"])
    vlm.answer(FrameBatch(video, np.array([1.0, 2.0]), video.size._replace(width=10)), "what?")
    captioner.caption(frames)
    assert CachedCaptioner(inner, cache).caption(frames) == captioner.caption(frames)
    captioner.caption(frames, max_tokens=8)
    assert inner.calls == 5
    assert vlm.usage == Cost(vlm_calls=4, frames=8, visual_tokens=28)  # hits count like misses
    assert (vlm.hits, vlm.misses) == (1, 3)
    inner.config = {"backend": "counting", "version": 2}  # a new prompt: a new key
    CachedVLM(inner, cache).answer(frames, "what?", ["a", "b"])
    assert inner.calls == 6
    with pytest.raises(ConfigError, match="simulated"):
        CachedVLM(SimulatedVLM())
    no_config = CountingBackend()
    del no_config.config
    with pytest.raises(ConfigError, match="no `config`"):
        CachedCaptioner(no_config)


def test_policies_on_one_dataset_caption_each_level1_clip_once(tmp_path: Path) -> None:
    inner, cache = CountingBackend(), DiskCache(tmp_path / "c")
    samples = load_suite("synth-tiny")
    names = ["sequential", "iterative-sampling", "uniform", "random"]
    for name in names:  # each policy gets its own env, as in a benchmark
        perception = Perception(vlm=SimulatedVLM(), captioner=CachedCaptioner(inner, cache))
        env = ZoomEnv(samples, perception=perception)
        for index in range(len(samples)):
            record = policies.run_episode(
                env, policies.make(name), seed=0, options={"index": index}
            )
            assert record.get("error") is None
    clips = {
        (video_fingerprint(s.video), start)
        for s in samples
        for start in np.arange(0, s.video.duration, 60.0)
    }
    assert inner.calls == len(clips)
    assert 0 < len(clips) < len(names) * len(samples) * 2


def test_cache_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from video_env.cli import main

    folder = tmp_path / "c"
    cache = DiskCache(folder)
    cache.set(cache_key("caption", {"a": 1}), "x")
    cache.set(cache_key("vlm", {"a": 1}), "y")
    assert main(["cache", "info", "--dir", str(folder)]) == 0
    assert "entries: 2  (caption 1, vlm 1, clip 0, judge 0)" in capsys.readouterr().out
    assert main(["cache", "clear", "--dir", str(folder), "--kind", "vlm"]) == 0
    assert main(["cache", "clear", "--dir", str(folder)]) == 0
    assert "removed 1 vlm entries" in capsys.readouterr().out
    assert DiskCache(folder).info().entries == 0


def test_cache_command_neither_creates_a_folder_nor_hides_that_caching_is_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from video_env.cli import main

    folder = tmp_path / "absent" / "cache"
    assert main(["cache", "info", "--dir", str(folder)]) == 0
    assert main(["cache", "clear", "--dir", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "entries: 0" in out and "removed 0" in out and "caching: off" not in out
    assert not (tmp_path / "absent").exists()
    monkeypatch.setenv("VIDEO_ENV_CACHE", "off")
    assert main(["cache", "info", "--dir", str(folder)]) == 0
    assert "caching: off" in capsys.readouterr().out
    assert main(["cache", "info", "--dir", str(folder), "--json"]) == 0
    assert '"enabled": false' in capsys.readouterr().out
