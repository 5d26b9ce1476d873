"""The pixel-real offline world: data, training, shipped weights, roles, labels."""

from __future__ import annotations

from pathlib import Path

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
from video_env.pixel.data import (
    INPUT_SIZE,
    READ_CATEGORIES,
    crop_box,
    render_dataset,
    split_videos,
    tile_boxes,
)
from video_env.pixel.train import Recipe, save_model, train_clip
from video_env.pixel.vlm import SCENE_DESCRIPTIONS, PixelRealVLM, PixelScorer, carrier_for
from video_env.synth.suites import list_suites, suite_videos
from video_env.synth.vocab import CARRIERS, FACT_POOLS, SCENE_STYLES
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


def test_the_docs_table_is_the_shipped_weights_evaluation() -> None:
    import json

    from benchmarks.studies.pixel_real_table import BEGIN, DOCS, END, markdown_table

    meta = json.loads((WEIGHTS_DIR / "pixel_real.json").read_text(encoding="utf-8"))
    block = DOCS.read_text(encoding="utf-8").split(BEGIN, 1)[1].split(END, 1)[0]
    assert block.strip() == markdown_table(meta).strip(), (
        "docs/pixel_real.md is stale: python -m benchmarks.studies.pixel_real_table --update-docs"
    )


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


def test_crops_centre_the_needle_at_a_readable_size() -> None:
    rng = np.random.default_rng(0)
    size = Size(1280, 720)
    for video in split_videos("train", 2):
        for needle in video.needles:
            x0, y0, x1, y1 = crop_box(needle, size, rng)
            assert 0 <= x0 < x1 <= size.width and 0 <= y0 < y1 <= size.height
            cx, cy = needle.position[0] * size.width, needle.position[1] * size.height
            assert x0 <= cx <= x1 and y0 <= cy <= y1
            assert (x1 - x0) / (y1 - y0) == pytest.approx(
                INPUT_SIZE.width / INPUT_SIZE.height, 0.05
            )
            assert needle.pixel_size / (y1 - y0) >= 0.2 - 1e-6 or y1 - y0 == size.height


def test_every_synthetic_question_names_its_carrier() -> None:
    for carrier in CARRIERS:
        assert carrier_for(carrier.question.format(carrier=carrier.name)) is carrier
    assert carrier_for("What is the meaning of life?") is None


def test_a_few_training_steps_save_a_folder_openclip_loads(tmp_path: Path) -> None:
    data = render_dataset(split_videos("train", 1), seed=0, per_needle=3)
    assert data.images.shape[1:] == (INPUT_SIZE.height, INPUT_SIZE.width, 3)
    assert len(data.images) == len(data.captions) and len(set(data.captions)) > 5
    assert all(c in p for c, p in zip(data.captions, data.positives, strict=True))
    model = train_clip(data, Recipe(steps=2, batch_size=8), progress=lambda _: None)
    folder = save_model(model, tmp_path / "w", {"temperature": 1.0})
    clip = OpenCLIP(str(folder), device="cpu", cache=None)
    assert clip.text_features(["a red kite"]).shape == (1, clip.embed_dim)


@pytest.mark.parametrize("loss", ["multi", "clip"])
def test_training_is_reproducible_bit_for_bit(loss: str) -> None:
    import torch

    data = render_dataset(split_videos("train", 1), seed=0, per_needle=3)
    recipe = Recipe(steps=3, batch_size=8, loss=loss)
    first, second = (train_clip(data, recipe, progress=lambda _: None) for _ in range(2))
    for (name, a), b in zip(first.state_dict().items(), second.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    changed = train_clip(data, Recipe(steps=3, batch_size=8, loss=loss, seed=1), lambda _: None)
    assert not torch.equal(first.text_projection, changed.text_projection)


def test_the_text_bank_marks_every_true_text_and_adds_hard_negatives() -> None:
    from video_env.pixel.train import TextBank

    data = render_dataset(split_videos("train", 1), seed=0, per_needle=3)
    bank = TextBank(data, Recipe(batch_size=8, hard_negatives=3))
    batch = np.arange(8)
    columns, truth = bank.bank(batch)
    texts = [bank.texts[c] for c in columns]
    for row, i in enumerate(batch):
        assert {texts[j] for j in np.flatnonzero(truth[row])} == set(data.positives[i]) - {""}
    carriers = {c.name: c for c in CARRIERS}
    read = [
        carriers[data.positives[i][2]]
        for i in batch
        if len(data.positives[i]) > 1 and carriers[data.positives[i][2]].category in READ_CATEGORIES
    ]
    assert read, "the first samples of the video show a colour, material or object needle"
    carrier = read[0]
    statements = {carrier.template.format(fact=f) for f in FACT_POOLS[carrier.facts]}
    assert len(statements & set(texts)) >= 3
    assert {s.description for s in SCENE_STYLES} <= set(texts)


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


def test_single_view_mcq_scores_one_crop_and_one_tile_per_needle(scorer: PixelScorer) -> None:
    from video_env.pixel.evaluate import single_view

    videos = split_videos("test", 1)
    table = single_view(scorer, videos)
    assert set(table) == {"crop", "tile", "crop_carrier", "tile_carrier"}
    kinds = {"colour", "material", "object", "text", "time"}
    for by_category in table.values():
        assert set(by_category) <= kinds and by_category
        assert all(0.0 <= v <= 1.0 for v in by_category.values())
    again = single_view(scorer, split_videos("test", 1))
    assert again == table, "the crops' jitter is seeded"


def test_the_calibration_fits_the_prior_weight_that_removes_an_option_bias() -> None:
    from video_env.pixel.calibration import fit_calibration, option_scores

    rng = np.random.default_rng(0)
    rows: list[dict[str, object]] = []
    for k in range(300):
        truth = int(rng.integers(4))
        bias = rng.normal(0, 3, 4)  # each option's prior on the frames, unrelated to the truth
        best = bias + rng.normal(0, 0.5, 4)
        evidence = k % 3 != 0
        if evidence:
            best[truth] += 2.0
        condition = "720p" if evidence else "none"
        rows.append(
            {"best": best, "mean": bias, "truth": truth, "condition": condition, "scene_best": 1.0}
        )
    weight, margin, temperature = fit_calibration(rows, scale=1.0)
    assert weight == 1.0 and 0.05 < temperature < 200
    unbiased = np.mean([np.argmax(option_scores(r, 1.0)) == r["truth"] for r in rows])
    biased = np.mean([np.argmax(option_scores(r, 0.0)) == r["truth"] for r in rows])
    assert unbiased > biased + 0.2


def test_without_the_needle_the_not_in_view_answer_takes_the_mass() -> None:
    from video_env.pixel.calibration import answer_logits, fit_calibration

    rng = np.random.default_rng(2)
    rows: list[dict[str, object]] = []
    for k in range(300):
        truth = int(rng.integers(4))
        evidence = k % 2 == 0
        best = rng.normal(0, 0.3, 4) + (np.eye(4)[truth] * 3.0 if evidence else 0.0)
        rows.append(
            {
                "best": best,
                "mean": np.zeros(4),
                "truth": truth,
                "condition": "720p" if evidence else "other",
                "scene_best": 1.5,  # the scene beats every option unless the needle is there
            }
        )
    weight, margin, temperature = fit_calibration(rows, scale=1.0)
    confidence: dict[bool, list[float]] = {True: [], False: []}
    for r in rows:
        z = answer_logits(r, weight, margin, 1.0) / temperature
        p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        confidence[r["condition"] == "720p"].append(p[:-1].max() + p[-1] / 4)
    assert np.mean(confidence[True]) > 0.6 > 0.35 > np.mean(confidence[False])


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


def test_no_evidence_windows_show_no_needle_and_differ_per_draw() -> None:
    from video_env.pixel.evaluate import condition_window

    (video,) = split_videos("test", 1)
    needle = video.needles[0]
    windows = [condition_window(video, needle, "none", draw) for draw in range(4)]
    assert len(set(windows)) == 4, "each draw looks at another needle-free window"
    assert windows[0] == condition_window(video, needle, "none"), (
        "draw 0 is the calibration's window"
    )
    for window in windows:
        for t in np.linspace(window.start, window.end, 11):
            assert not video.needles_at(float(t)), "a no-evidence window shows a needle"
    others = [condition_window(video, needle, "other", draw) for draw in range(3)]
    assert len(set(others)) == 3
    for window in others:
        shown = video.needles_at(window.start + window.length / 2)
        assert shown and needle not in shown


def test_the_table_gives_each_accuracy_its_count_and_interval_over_videos() -> None:
    from video_env.pixel.evaluate import _table

    rng = np.random.default_rng(3)
    rows: list[dict[str, object]] = []
    for v in range(6):
        for draw in range(3):
            truth = int(rng.integers(4))
            best = rng.normal(0, 1, 4)
            rows.append(
                {
                    "best": best, "mean": np.zeros(4), "truth": truth, "condition": "none",
                    "scene_best": 0.0, "category": "colour", "video": f"v{v}", "draw": draw,
                    "options": ["red", "blue", "green", "pink"],
                }
            )  # fmt: skip
    table = _table(rows, temperature=1.0, prior_weight=0.0, null_margin=0.0, scale=1.0)
    accuracy = table["mcq"]["none"]["colour"]  # type: ignore[index]
    low, high = table["mcq_interval"]["none"]["colour"]  # type: ignore[index]
    assert low <= accuracy <= high and low < high
    assert table["mcq_count"]["none"]["colour"] == 18  # type: ignore[index]
    assert table["n_mcq"] == 6, "calibration is measured on the first draw only"


def test_most_guessed_names_the_fact_an_option_prior_crowds_the_guesses_on() -> None:
    from video_env.pixel.evaluate import most_guessed

    pool = ["wood", "metal", "glass", "stone", "plastic"]
    rng = np.random.default_rng(4)
    rows: list[dict[str, object]] = []
    for k in range(200):
        options = [pool[i] for i in rng.choice(5, 4, replace=False)]
        best = np.array([3.0 if o == "stone" else rng.normal() for o in options])
        rows.append(
            {
                "best": best, "mean": np.zeros(4), "truth": int(rng.integers(4)),
                "options": options, "condition": "none" if k % 2 else "720p",
                "category": "material",
            }
        )  # fmt: skip
    fact, guessed, truth = most_guessed(rows, prior_weight=0.0)["none"]["material"]
    offering_stone = [r for r in rows[1::2] if "stone" in r["options"]]  # type: ignore[operator]
    assert fact == "stone" and guessed == pytest.approx(len(offering_stone) / 100)
    expected = np.mean([r["options"][r["truth"]] == "stone" for r in offering_stone])  # type: ignore[index]
    assert truth == pytest.approx(expected, abs=1e-4)
    assert "720p" not in most_guessed(rows, prior_weight=0.0)


@pytest.mark.slow
def test_the_training_step_benchmark_prints_a_projection(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks.perf import pixel_train_step

    assert pixel_train_step.main(["--steps", "1", "--videos", "2"]) == 0
    out = capsys.readouterr().out
    assert "GFLOP/s" in out and "one thread / two threads" in out
    assert "projected default recipe (160 videos, 3000 steps)" in out
