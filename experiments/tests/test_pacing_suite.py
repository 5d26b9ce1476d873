"""The pacing-suite study's bookkeeping: evidence overlap, paired accuracy, the table."""

from pathlib import Path
from typing import Any

from experiments.pacing_suite.separation import (
    evidence_row,
    format_separation,
    paired_accuracy,
    summarise,
)
from video_env.synth.suites import load_suite


def _row(model: str, sample: str, video: str, right: bool, on: bool) -> dict[str, Any]:
    return {"model": model, "sample_id": sample, "video": video, "accuracy": float(right),
            "frames": 20.0, "turns": 1.0, "on_evidence": on, "evidence_shown": on}  # fmt: skip


def test_evidence_row_reads_the_answer_window_against_the_evidence() -> None:
    sample = load_suite("synth-visible", forms=["mcq"], limit=1)[0]
    (evidence,) = sample.gt_intervals
    start, end = evidence.start, evidence.end
    record = {"correct": True, "frames_shown": 40, "turns": 3, "window": [start, end],
              "explored": [[0.0, start], [start, end]]}  # fmt: skip
    row = evidence_row("pacing-1x", sample, record)
    assert row["on_evidence"] and row["evidence_shown"] and row["accuracy"] == 1.0
    assert row["video"] == "synth-visible-000"
    record = {**record, "window": [0.0, start], "explored": [[0.0, start]]}
    row = evidence_row("pacing-1x", sample, record)
    assert not row["on_evidence"] and not row["evidence_shown"]


def test_paired_accuracy_and_table() -> None:
    rows = [_row("pacing-1x", f"v{i}/q", f"v{i}", True, True) for i in range(4)] + [
        _row("pacing-4x", f"v{i}/q", f"v{i}", i < 2, i < 2) for i in range(4)
    ]
    mean, low, high = paired_accuracy(rows, "pacing-1x", "pacing-4x")
    assert mean == -0.5 and low <= mean <= high
    summary = summarise(rows)
    assert summary["policies"]["pacing-4x"]["acc_off_evidence"] == [2, 0.0]
    assert summary["policies"]["pacing-1x"]["right_on_evidence"] == 1.0
    lines = format_separation(summary)
    assert lines[2].startswith("| pacing-1x | 4 (4) | 1.00")
    assert "pacing-4x − pacing-1x" in lines[-1]


def test_held_out_table_pairs_and_draws_a_bench_run(tmp_path: Path) -> None:
    from experiments.pacing_suite.held_out import action_kind, main, paired, rows_of, table
    from video_env.cli import main as cli

    out = tmp_path / "bench"
    assert cli(["bench", "--suite", "synth-tiny", "--envs", "pacing", "--limit", "4",
                "--policies", "pacing-1x", "pacing-4x", "--executor", "serial", "--quiet",
                "--no-plots", "--out", str(out)]) == 0  # fmt: skip
    rows = rows_of(out, forms=["mcq"])
    assert {r["policy"] for r in rows} == {"pacing-1x", "pacing-4x"}
    assert all(r["sample_id"].endswith("/mcq") for r in rows)
    one = next(r for r in rows if r["policy"] == "pacing-1x")
    assert one["actions"][-1] == "answer" and set(one["actions"][:-1]) <= {"speed(1x)"}
    cells = table(rows)
    assert cells["pacing-4x"]["frames"][0] < cells["pacing-1x"]["frames"][0]
    diff = paired(rows, "pacing-1x", "pacing-4x")
    assert diff["frames"][0] < 0 and diff["frames"][1] <= diff["frames"][0] <= diff["frames"][2]
    assert [action_kind(a) for a in ("speed(4x)", "rewatch(2)", "answer('A')", "zzz")] == [
        "speed(4x)", "rewatch", "answer", "invalid"
    ]  # fmt: skip
    args = [str(out), "--baseline", "pacing-1x", "--histogram", "pacing-1x", "pacing-4x"]
    assert main([*args, "--out", str(tmp_path / "table")]) == 0
    assert (tmp_path / "table" / "speeds.png").stat().st_size > 0
