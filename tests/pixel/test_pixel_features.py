"""Cached tile features of the pixel-real roles: the same numbers as the per-call path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("open_clip")

from benchmarks.perf.pixel_real import LegacyScorer
from video_env.backends.base import FrameBatch
from video_env.cache.fingerprint import video_fingerprint
from video_env.cache.store import DiskCache
from video_env.pixel.features import cut_tiles
from video_env.pixel.tiles import cut_tile, tile_boxes
from video_env.pixel.vlm import PixelRealCaptioner, PixelRealVLM, PixelScorer, one_torch_thread
from video_env.synth import load_suite
from video_env.types import Interval, VideoQA
from video_env.video.base import Size


@pytest.fixture(scope="module")
def sample() -> VideoQA:
    return next(s for s in load_suite("synth-tiny") if s.category == "object" and s.options)


SMALL = Size(448, 252)


def _batch(sample: VideoQA, size: Size = SMALL, n: int = 2) -> FrameBatch:
    iv = sample.gt_intervals[0]
    return FrameBatch.sample(sample.video, Interval(iv.start, iv.end), n, size)


def test_pillow_crops_cut_the_same_tiles_as_the_training_data(sample: VideoQA) -> None:
    frame = _batch(sample, Size(500, 281), 1).pixels()[0]
    boxes = [b for g in (1, 2, 3) for b in tile_boxes(Size(500, 281), g)]
    for box, tile in zip(boxes, cut_tiles(frame, boxes), strict=True):
        assert np.array_equal(tile, cut_tile(frame, box))


def test_cached_tile_features_equal_the_per_call_path(sample: VideoQA, tmp_path: Path) -> None:
    legacy = LegacyScorer(cache=None)
    cache = DiskCache(tmp_path / "cache")
    scorer = PixelScorer(cache=cache)
    batch = _batch(sample)
    with one_torch_thread():  # the legacy path on the machine's threads is slow when shared
        expected = legacy.tile_features(batch)
    first = scorer.tile_features(_batch(sample))
    assert first.shape == expected.shape
    assert np.allclose(first, expected, atol=1e-6)
    computed = scorer.tiles.computed
    assert computed == 2 * len(scorer.grids)  # one entry per (frame, grid)
    again = scorer.tile_features(_batch(sample))  # a new batch object: found in memory
    assert np.array_equal(again, first) and scorer.tiles.computed == computed
    # A subset of grids (the captioner's) reuses the same entries.
    scorer.tile_features(_batch(sample), grids=(1, 2))
    assert scorer.tiles.computed == computed
    # Another process (a fresh scorer on the same disk cache) computes nothing.
    other = PixelScorer(cache=DiskCache(tmp_path / "cache"))
    assert np.array_equal(other.tile_features(_batch(sample)), first)
    assert other.tiles.computed == 0


@pytest.mark.slow
def test_answers_and_captions_are_pinned_to_the_per_call_path(sample: VideoQA) -> None:
    legacy, scorer = LegacyScorer(cache=None), PixelScorer(cache=None)
    for size in (Size(224, 126), Size(640, 360)):
        batch = _batch(sample, size, 2)
        with one_torch_thread():
            old = PixelRealVLM(legacy).answer(batch, sample.question, sample.options)
            old_open = PixelRealVLM(legacy).answer(batch, sample.question)
            old_caption = PixelRealCaptioner(legacy).caption(batch)
        new = PixelRealVLM(scorer).answer(batch, sample.question, sample.options)
        assert new.text == old.text and new.n_visual_tokens == old.n_visual_tokens
        assert new.confidence == pytest.approx(old.confidence, abs=1e-6)
        assert PixelRealVLM(scorer).answer(batch, sample.question).text == old_open.text
        assert PixelRealCaptioner(scorer).caption(batch) == old_caption


def test_batched_normalisation_equals_open_clips_preprocessing(sample: VideoQA) -> None:
    import torch

    clip = PixelScorer(cache=None).clip
    tiles = np.stack(cut_tiles(_batch(sample, n=1).pixels()[0], tile_boxes(Size(448, 252), 2)))
    reference = clip._pil_batch(tiles)
    assert torch.equal(clip._image_batch(tiles), reference)
    assert clip._batched_ok is True
    odd = np.zeros((2, 50, 70, 3), dtype=np.uint8)  # not the input size: the Pillow path
    assert torch.equal(clip._image_batch(odd), clip._pil_batch(odd))


def test_synthetic_fingerprints_cover_the_renderer(
    sample: VideoQA, monkeypatch: pytest.MonkeyPatch
) -> None:
    from video_env.cache import fingerprint

    before = video_fingerprint(sample.video)
    monkeypatch.setattr(fingerprint, "renderer_digest", lambda: "another drawing")
    assert video_fingerprint(sample.video) != before
