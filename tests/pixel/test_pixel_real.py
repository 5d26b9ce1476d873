"""The pixel-real offline world: data, training, shipped weights, roles, labels."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("open_clip")

from benchmarks.config import BenchConfig
from benchmarks.summary import perception_label
from video_env.backends.base import FrameBatch
from video_env.backends.openclip import OpenCLIP
from video_env.backends.registry import make_backend, parse_spec
from video_env.envs.perception import Perception, resolve_perception
from video_env.pixel import WEIGHTS_DIR
from video_env.pixel.splits import split_videos
from video_env.pixel.tiles import INPUT_SIZE, tile_boxes
from video_env.pixel.vlm import SCENE_DESCRIPTIONS, PixelRealVLM, PixelScorer, carrier_for
from video_env.synth.suites import list_suites, suite_videos
from video_env.synth.vocab import CARRIERS
from video_env.types import OPTION_LETTERS, Interval
from video_env.video.base import Size


@pytest.fixture(scope="module")
def scorer() -> PixelScorer:
    return PixelScorer(cache=None)


def test_shipped_weights_are_small_and_load_with_openclip() -> None:
    files = list(WEIGHTS_DIR.iterdir())
    assert {"open_clip_config.json", "open_clip_model.safetensors"} <= {f.name for f in files}
    assert sum(f.stat().st_size for f in files) <= 20 * 1024**2
    clip = OpenCLIP(str(WEIGHTS_DIR), device="cpu", cache=None)
    features = clip.text_features(["a red umbrella", "a blue umbrella"])
    assert features.shape == (2, clip.embed_dim)
    assert clip.input_size == INPUT_SIZE


def test_training_videos_are_disjoint_from_every_suite() -> None:
    suite = {v.seed for s in list_suites() for v in suite_videos(s.name)}
    for split in ("train", "calib", "test"):
        assert not {v.seed for v in split_videos(split, 5)} & suite
    assert not {v.seed for v in split_videos("train", 5)} & {
        v.seed for v in split_videos("test", 5)
    }


def test_tiles_cover_the_frame() -> None:
    size = Size(1280, 720)
    for grid in (1, 2, 3):
        boxes = tile_boxes(size, grid)
        assert min(b[0] for b in boxes) == 0 and max(b[2] for b in boxes) == size.width
        assert min(b[1] for b in boxes) == 0 and max(b[3] for b in boxes) == size.height


def test_every_synthetic_question_names_its_carrier() -> None:
    for carrier in CARRIERS:
        assert carrier_for(carrier.question.format(carrier=carrier.name)) is carrier
    assert carrier_for("What is the meaning of life?") is None


def test_pixel_real_perception_is_labelled_pixel_real() -> None:
    perception = Perception.pixel_real()
    assert perception.label == "pixel-real"
    assert not perception.simulated and perception.is_pixel_real
    assert [b.name for b in perception.backends] == [
        "pixel-real:vlm",
        "pixel-real:captioner",
        "pixel-real:clip",
    ]
    assert resolve_perception("pixel-real").label == "pixel-real"
    assert Perception.offline().label == "simulated"


def test_specs_and_bench_config_know_pixel_real() -> None:
    assert parse_spec("clip", "pixel-real").pixel_real
    assert isinstance(make_backend("vlm", "pixel-real"), PixelRealVLM)
    config = BenchConfig(perception="pixel-real")
    assert set(config.perception_specs().values()) == {"pixel-real"}
    assert config.perception_label == "pixel-real" and not config.simulated_roles()
    assert BenchConfig().perception_label == "simulated"
    assert perception_label([{"pixel_real": True}]) == "pixel-real"
    assert perception_label([{"pixel_real": True}, {"simulated": True}]) == "simulated"


@pytest.mark.slow
def test_vlm_and_captioner_answer_from_the_pixels(scorer: PixelScorer) -> None:
    from video_env.pixel.vlm import PixelRealCaptioner
    from video_env.synth.questions import needle_sample

    vlm, captioner = PixelRealVLM(scorer), PixelRealCaptioner(scorer)
    video = split_videos("test", 1)[0]
    needle = next(n for n in video.needles if n.category == "visual")
    sample = needle_sample(video, needle, "mcq")
    iv = needle.intervals[0]
    seen = FrameBatch.sample(video, Interval(iv.start, iv.end), 2, Size(640, 360))
    empty = FrameBatch.sample(video, Interval(0.0, 2.0), 2, Size(640, 360))
    answer = vlm.answer(seen, sample.question, sample.options)
    assert answer.text in OPTION_LETTERS[:4]
    assert 0.25 <= answer.confidence <= 1.0 and answer.n_visual_tokens > 0
    statements = [f"a {o} thing" for o in sample.options or ()]
    with_needle = scorer.scores(scorer.tile_features(seen), statements)
    without = scorer.scores(scorer.tile_features(empty), statements)
    assert not np.allclose(with_needle, without)  # the scores come from the pixels
    assert vlm.answer(empty, "What is the meaning of life?").confidence == 0.0
    assert vlm.usage.vlm_calls == 2 and vlm.usage.frames == 4
    caption = captioner.caption(seen, max_tokens=40)
    assert caption and len(caption.split()) <= 40
    assert captioner.usage.caption_calls == 1


def test_scores_take_the_prior_weight_of_each_text_mean_off_its_best_tile() -> None:
    rng = np.random.default_rng(1)
    tiles = rng.normal(size=(12, 128)).astype(np.float32)
    tiles /= np.linalg.norm(tiles, axis=1, keepdims=True)
    texts = ["a red kite", "a blue kite"]
    plain = PixelScorer(cache=None, prior_weight=0.0)
    weighted = PixelScorer(cache=None, prior_weight=0.5)
    best, mean = plain.tile_statistics(tiles, texts)
    assert np.allclose(plain.scores(tiles, texts), best, atol=1e-5)
    assert np.allclose(weighted.scores(tiles, texts), best - 0.5 * mean, atol=1e-5)
    assert weighted.config["prior_weight"] == 0.5
    gated = PixelScorer(cache=None, prior_weight=0.5, null_margin=0.1)
    probs = gated.answer_probabilities(tiles, texts)
    scene = gated.tile_statistics(tiles, SCENE_DESCRIPTIONS)[0].max()
    null = scene + 0.1 * gated.scale - 0.5 * mean.mean()
    logits = np.append(gated.scores(tiles, texts), null) / gated.temperature
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    assert np.allclose(probs, expected[:-1] + expected[-1] / 2, atol=1e-6)
    assert np.isclose(probs.sum(), 1.0)
