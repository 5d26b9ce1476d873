"""The simulator-validation report: its statistics, its block in the docs, its zoom study."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.config import BenchConfig
from benchmarks.jobs import load_samples
from experiments.simulator.simulator_validation import BEGIN, END, configs, update_docs
from experiments.simulator.validation_report import diagnose, markdown
from experiments.simulator.validation_stats import (
    falconeye_vs_uniform,
    policy_table,
    ranks,
    readings_summary,
    spearman,
)
from video_env.errors import ConfigError


def test_ranks_average_ties() -> None:
    assert ranks([3.0, 1.0, 2.0]).tolist() == [3.0, 1.0, 2.0]
    assert ranks([0.5, 0.1, 0.5, 0.9]).tolist() == [2.5, 1.0, 2.5, 4.0]


def test_spearman_matches_scipy_with_ties() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.integers(0, 5, size=9).astype(float)
        b = a + rng.integers(-2, 3, size=9)
        expected = stats.spearmanr(a, b).statistic
        got = spearman(a.tolist(), b.tolist())
        if np.isnan(expected):
            assert got is None
        else:
            assert got == pytest.approx(expected, abs=1e-4)
    assert spearman([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == -1.0
    assert spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None
    assert spearman([1.0, 2.0], [1.0, 2.0]) is None


def test_policy_table_pairs_rows_of_both_runs() -> None:
    sim = [
        {"env": "zoom", "policy": "uniform", "episodes": 4, "accuracy": 0.5, "mean_gtou": 0.1,
         "mean_vlm_calls": 1.0, "mean_model_tokens": 100.0},
        {"env": "zoom", "policy": "only-simulated", "episodes": 4, "accuracy": 0.5},
    ]  # fmt: skip
    pix = [{"env": "zoom", "policy": "uniform", "episodes": 3, "accuracy": "0.25",
            "mean_gtou": "", "mean_vlm_calls": 1.0, "mean_model_tokens": 90.0}]  # fmt: skip
    (row,) = policy_table(sim, pix)
    assert row["accuracy_simulated"] == 0.5 and row["accuracy_pixel"] == 0.25
    assert row["episodes"] == 3 and np.isnan(row["gtou_pixel"])


def _record(policy: str, sample: str, video: str, correct: bool | None) -> dict[str, Any]:
    return {"job": f"zoom|{policy}|{sample}|0", "seed": 0, "video_id": video, "correct": correct}


def test_falconeye_vs_uniform_is_paired_by_question() -> None:
    records = [
        _record("falconeye", "a", "v1", True),
        _record("uniform", "a", "v1", False),
        _record("falconeye", "b", "v2", True),
        _record("uniform", "b", "v2", True),
        _record("falconeye", "c", "v2", True),  # no uniform episode: not paired
        _record("uniform", "d", "v3", None),  # ungraded
    ]
    result = falconeye_vs_uniform(records, resamples=200)
    assert result["pairs"] == 2 and result["videos"] == 2
    assert result["delta"] == 0.5 and result["accuracy_better"] == 1.0
    assert 0.0 <= result["ci_low"] <= result["delta"] <= result["ci_high"] <= 1.0
    assert falconeye_vs_uniform([])["pairs"] == 0


def test_bench_categories_filter_the_suite() -> None:
    config = BenchConfig(suite="synth-tiny", categories=("object",))
    samples = load_samples(config)
    assert samples and {s.category for s in samples} == {"object"}
    assert len(load_samples(BenchConfig(suite="synth-tiny", categories=("object",), limit=1))) == 1
    assert BenchConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ConfigError, match="no sample of categories"):
        load_samples(BenchConfig(suite="synth-tiny", categories=("visual",)))
    with pytest.raises(ConfigError):
        BenchConfig(categories=())


def test_the_two_configs_differ_only_in_perception(tmp_path: Path) -> None:
    both = configs(str(tmp_path), "synth-quick", ["visual"], ["zoom"], ["uniform"], [0])
    sim, pix = both["simulated"], both["pixel-real"]
    assert sim.perception_label == "simulated" and pix.perception_label == "pixel-real"
    assert pix.vlm == f"pixel-real:{tmp_path.resolve()}"
    assert (sim.suite, sim.categories, sim.envs, sim.policies) == (
        pix.suite, pix.categories, pix.envs, pix.policies,
    )  # fmt: skip
    assert configs(None, "synth-quick", ["visual"], ["zoom"], ["uniform"], [0])[
        "pixel-real"
    ].perception_specs() == {"vlm": "pixel-real", "captioner": "pixel-real", "clip": "pixel-real"}


def _report() -> dict[str, Any]:
    point = {"value": 5.0, "frames": 10, "size": "1456x812", "simulated": 0.9, "pixel_real": 0.5}
    return {
        "command": "python -m experiments.simulator.simulator_validation --out X",
        "weights": {"folder": "shipped", "steps": 640, "batch_size": 48, "temperature": 109.0},
        "suite": "synth-quick",
        "categories": ["visual", "object"],
        "questions": 22,
        "policies": [
            {
                "env": "zoom",
                "policy": "uniform",
                "episodes": 22,
                "accuracy_simulated": 0.3,
                "accuracy_pixel": 0.2,
                "gtou_simulated": 0.0,
                "gtou_pixel": 0.0,
                "vlm_calls_simulated": 1.0,
                "vlm_calls_pixel": 1.0,
                "model_tokens_simulated": 1234.0,
                "model_tokens_pixel": 99.0,
            },
        ],
        "spearman": 0.5,
        "falconeye_vs_uniform": {"pairs": 0},
        "zoom_suite": "synth-quick",
        "zoom_questions": 11,
        "window_curve": [point],
        "resolution_curve": [{**point, "value": 448.0}],
        "wall_s": {"simulated": 10.0, "pixel-real": 300.0},
        "readings": {
            "simulated": {
                "readings": 10,
                "accuracy": 0.7,
                "mean_confidence": 0.7,
                "confidence_std": 0.2,
                "above_0_9": 0.3,
                "ace": 0.05,
                "confidence_gap": 0.3,
            },
            "pixel-real": {
                "readings": 10,
                "accuracy": 0.3,
                "mean_confidence": 0.26,
                "confidence_std": 0.01,
                "above_0_9": 0.0,
                "ace": 0.04,
                "confidence_gap": 0.01,
            },
        },
    }


def test_markdown_block_and_docs_update(tmp_path: Path) -> None:
    block = markdown(_report(), "fig.png")
    assert "| zoom | uniform | 0.30 | 0.20 |" in block
    assert "0.50: below the target 0.8" in block and "![simulated vs pixel-real](fig.png)" in block
    doc = tmp_path / "doc.md"
    doc.write_text(f"intro\n{BEGIN}\nold numbers\n{END}\noutro\n", encoding="utf-8")
    update_docs(doc, block)
    text = doc.read_text(encoding="utf-8")
    assert "old numbers" not in text and block in text
    assert text.startswith("intro\n") and text.endswith(f"{END}\noutro\n")
    (tmp_path / "plain.md").write_text("no markers", encoding="utf-8")
    with pytest.raises(ValueError, match="no"):
        update_docs(tmp_path / "plain.md", block)


def test_the_figure_is_written(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from experiments.simulator.validation_report import plot

    path = plot(tmp_path / "v.png", _report())
    assert path.stat().st_size > 10_000


@pytest.mark.slow
def test_zoom_curves_from_pixels_and_the_simulator() -> None:
    pytest.importorskip("open_clip")
    from experiments.simulator.zoom_effect import needle_mcqs, resolution_curve, window_curve
    from video_env.pixel.vlm import PixelRealVLM, PixelScorer
    from video_env.synth import load_suite

    samples = needle_mcqs(load_suite("synth-tiny"), ["object"])[:1]
    vlm = PixelRealVLM(PixelScorer(cache=None, max_frames=1, grids=(1,)))
    windows = window_curve(samples, vlm, lengths=(5.0, 120.0))
    assert [p.value for p in windows] == [5.0, 120.0] and windows[0].questions == 1
    # The simulator: a 5 s window inside the evidence beats a 120 s one around it.
    assert windows[0].simulated > windows[1].simulated >= 0.25
    assert windows[0].frames == 10 and windows[1].frames > 10
    assert all(p.pixel_real in (0.0, 1.0) for p in windows)
    widths = resolution_curve(samples, vlm, widths=(160, 1280))
    assert widths[0].size == "160x90" and widths[1].size == "1280x720"
    assert widths[1].simulated >= widths[0].simulated
    assert vlm.usage.vlm_calls == 4


def test_readings_summary_pools_graded_readings() -> None:
    records = [{"vlm_readings": [[0.9, True], [0.3, False]]}, {"vlm_readings": [[0.5, None]]}, {}]
    summary = readings_summary(records)
    assert summary["readings"] == 2 and summary["accuracy"] == 0.5
    assert summary["mean_confidence"] == 0.6 and summary["above_0_9"] == 0.0
    assert summary["confidence_gap"] == 0.6
    assert readings_summary([{}]) == {"readings": 0}


def test_diagnosis_names_the_assumptions_that_break() -> None:
    report = _report()
    text = "\n".join(diagnose(report))
    assert "Perception with the evidence in view" in text and "overstate" in text
    assert "say less about correctness" in text
    report["window_curve"][0]["pixel_real"] = 0.85
    report["readings"]["pixel-real"].update(confidence_gap=0.2, above_0_9=0.3)
    text = "\n".join(diagnose(report))
    assert "overstate" not in text and "say less" not in text


def test_new_pixel_real_weights_are_a_new_set_up(tmp_path: Path) -> None:
    import shutil

    from benchmarks.provenance import pixel_real_weights
    from video_env.pixel import WEIGHTS_DIR

    assert pixel_real_weights(BenchConfig()) == {}
    assert set(pixel_real_weights(BenchConfig(perception="pixel-real"))) == {"shipped"}
    folder = tmp_path / "w"
    shutil.copytree(WEIGHTS_DIR, folder)
    config = configs(str(folder), "synth-tiny", ["object"], ["zoom"], ["uniform"], [0])[
        "pixel-real"
    ]
    before = pixel_real_weights(config)
    (folder / "pixel_real.json").write_text('{"temperature": 2.0}', encoding="utf-8")
    after = pixel_real_weights(config)
    assert set(before) == {str(folder.resolve())} and before != after
