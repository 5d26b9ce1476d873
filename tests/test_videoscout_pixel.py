"""The VideoScout-on-the-pixel-VLM study: format validity, kept episodes, fixed schedules."""

import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from benchmarks.studies.videoscout_pixel import (
    COLUMNS,
    format_table,
    format_valid,
    policy_rows,
    run_baseline,
    summarise,
)
from policies.training.cli import split_samples
from video_env.types import VideoQA

pytest.importorskip("transformers")


def test_the_videoscout_study_scores_format_validity_and_clusters_by_video() -> None:
    good = (
        "<think>0-29 s: a park.</think><memory>Watched up to 29 s.</memory>"
        "<action>speed(2x)</action>"
    )
    assert format_valid(good)
    assert not format_valid("C")
    assert not format_valid("<think>x</think><action>speed(2x)</action>"), "no notes"
    rows = [{"model": "m", "video": v, **dict.fromkeys(COLUMNS, float(v == "a"))} for v in "aab"]
    summary = summarise(rows)
    mean, low, high = summary["m"]["format_valid"]
    assert mean == pytest.approx(2 / 3, abs=1e-3) and low <= mean <= high
    assert summary["m"]["episodes"] == 3
    assert "| m | 3 | 0.67" in "\n".join(format_table(summary, {}))
    assert not format_valid("<think>Park.</think><memory>Seen: nothing.</memory>speed(2x)")


def test_a_policys_episodes_are_kept_and_reused_only_under_the_same_settings(
    tmp_path: Path,
) -> None:
    samples = split_samples("calib", 1, limit=2)
    played: list[int] = []

    def play(batch: Sequence[VideoQA]) -> list[dict[str, object]]:
        played.append(len(batch))
        return [{"model": "p/x", "sample_id": s.id, "accuracy": 1.0} for s in batch]

    settings = {"split": "calib", "rules": "pixel-vlm"}
    first = policy_rows(tmp_path, "p/x", samples, play, settings, log=lambda _: None)
    again = policy_rows(tmp_path, "p/x", samples, play, settings, log=lambda _: None)
    assert first[1] is False and again == (first[0], True) and played == [2], "rows kept"
    policy_rows(tmp_path, "p/x", samples, play, {**settings, "rules": "paper"}, log=print)
    policy_rows(tmp_path, "p/x", samples[:1], play, {**settings, "rules": "paper"}, log=print)
    assert played == [2, 2, 1], "other settings or questions play again"
    assert [p.name for p in (tmp_path / "policies").iterdir()] == ["p_x.json"]


@pytest.mark.slow
def test_fixed_schedules_read_the_pixel_vlms_sensor_and_have_no_format_column() -> None:
    samples = split_samples("calib", 1, limit=1)
    rows = run_baseline("pacing-4x", samples, log=lambda _: None)
    (row,) = rows
    assert row["error"] is None and row["ended_by"] == "answer"
    assert row["format_valid"] is None and row["frames"] > 0 and row["turns"] >= 1
    summary = summarise(rows)
    assert summary["pacing-4x"]["format_valid"] is None
    (line,) = [x for x in format_table(summary, {}) if x.startswith("| pacing-4x")]
    assert line.rstrip(" |").endswith("—")
    assert not math.isnan(summary["pacing-4x"]["accuracy"][0])
