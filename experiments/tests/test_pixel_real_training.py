"""The pixel-real offline world: data, training, shipped weights, roles, labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("open_clip")

from experiments.pixel_models.data import crop_box, render_dataset
from experiments.pixel_models.train import Recipe, save_model, train_clip
from video_env.backends.openclip import OpenCLIP
from video_env.pixel import WEIGHTS_DIR
from video_env.pixel.splits import READ_CATEGORIES, split_videos
from video_env.pixel.tiles import INPUT_SIZE
from video_env.pixel.vlm import PixelScorer
from video_env.synth.vocab import CARRIERS, FACT_POOLS, SCENE_STYLES
from video_env.video.base import Size


@pytest.fixture(scope="module")
def scorer() -> PixelScorer:
    return PixelScorer(cache=None)


def test_the_docs_table_is_the_shipped_weights_evaluation() -> None:
    import json

    from experiments._docs import block_text
    from experiments.pixel_models.pixel_real_table import BEGIN, END, markdown_table

    meta = json.loads((WEIGHTS_DIR / "pixel_real.json").read_text(encoding="utf-8"))
    block = block_text(BEGIN, END)
    assert block.strip() == markdown_table(meta).strip(), (
        "docs/pixel_real.md is stale: "
        "python -m experiments.pixel_models.pixel_real_table --update-docs"
    )


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
    from experiments.pixel_models.train import TextBank

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


def test_single_view_mcq_scores_one_crop_and_one_tile_per_needle(scorer: PixelScorer) -> None:
    from experiments.pixel_models.evaluate import single_view

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
    from experiments.pixel_models.calibration import fit_calibration, option_scores

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
    from experiments.pixel_models.calibration import answer_logits, fit_calibration

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


def test_no_evidence_windows_show_no_needle_and_differ_per_draw() -> None:
    from experiments.pixel_models.evaluate import condition_window

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
    from experiments.pixel_models.evaluate import _table

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
    from experiments.pixel_models.evaluate import most_guessed

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
    from experiments.pixel_models import train_step_perf

    assert train_step_perf.main(["--steps", "1", "--videos", "2"]) == 0
    out = capsys.readouterr().out
    assert "GFLOP/s" in out and "one thread / two threads" in out
    assert "projected default recipe (160 videos, 3000 steps)" in out
