"""The recipe-over-seeds study: the selection rule, the steps record and the table."""

import argparse
import json
from pathlib import Path

import pytest

from experiments.videoscout_pixel.dapo_seeds import (
    format_seed_table,
    passes_rule,
    run_steps,
    split_rows,
)
from experiments.videoscout_pixel.videoscout_pixel import COLUMNS, build_parser


def _row(model: str, sample: str, reward: float, accuracy: float) -> dict[str, object]:
    cells: dict[str, object] = dict.fromkeys(COLUMNS, 0.5)
    cells.update(reward=reward, accuracy=accuracy, frames=10.0)
    return {"model": model, "sample_id": sample, "video": sample[0], **cells}


def test_the_rule_wants_the_reward_interval_above_zero_and_accuracy_not_lower() -> None:
    assert passes_rule({"reward": [0.13, 0.02, 0.27], "accuracy": [0.0, -0.06, 0.08]})
    assert not passes_rule({"reward": [0.14, 0.04, 0.27], "accuracy": [-0.02, -0.06, 0.03]})
    assert not passes_rule({"reward": [0.06, -0.14, 0.23], "accuracy": [0.1, 0.0, 0.2]})


def test_a_runs_steps_come_from_its_record(tmp_path: Path) -> None:
    (tmp_path / "rl.json").write_text(json.dumps({"steps_done": 34}), "utf-8")
    assert run_steps(str(tmp_path)) == "34"
    assert run_steps(str(tmp_path / "missing")) == "—"


def test_each_run_is_paired_with_the_start_on_both_splits() -> None:
    samples = ("a1", "a2", "b1", "b2")
    calib = [_row("sft", s, 0.0, 0.0) for s in samples]
    calib += [_row("seed0", s, 0.5, 0.0) for s in samples]
    calib += [_row("seed1", s, 0.5, -1.0 if s == "a1" else 0.0) for s in samples]
    test = [_row(m, s, r, 0.0) for m, r in (("sft", 0.0), ("seed0", 0.2), ("seed1", -0.1))
            for s in samples]  # fmt: skip
    lines = format_seed_table("sft", ["seed0", "seed1"], calib, test, {"seed0": "seed 0"})
    assert lines[2].startswith("| seed 0 | — | +0.50 (+0.50 to +0.50) | +0.00")
    assert "| yes | +0.20 (+0.20 to +0.20) |" in lines[2]
    assert "| no | -0.10 (-0.10 to -0.10) |" in lines[3], "seed 1 lost accuracy on validation"
    assert lines[4].startswith("| sft | — |") and lines[4].endswith("| 0.50 | 10.0 |")
    assert len(lines) == 5


def test_the_rule_is_strict_at_zero() -> None:
    assert not passes_rule({"reward": [0.1, 0.0, 0.2], "accuracy": [0.0, 0.0, 0.0]})


def test_each_split_plays_with_the_per_split_studies_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from experiments.videoscout_pixel import dapo_seeds

    seen: list[argparse.Namespace] = []

    def fake_play(args: argparse.Namespace, log: object = print) -> tuple[list, list, int]:
        seen.append(args)
        return [], [], 2

    monkeypatch.setattr(dapo_seeds, "play", fake_play)
    rows, kept, settings = split_rows("test", (6, "t.jsonl", "out"), ["sft", "seed1"])
    assert (rows, kept) == ([], 2) and settings is seen[0]
    defaults = build_parser().parse_args([])
    for key in ("rules", "max_turns", "max_new_tokens", "limit", "end_note", "question_first"):
        assert getattr(settings, key) == getattr(defaults, key), key
    assert not (settings.guided or settings.format_guided or settings.plain_prompt)
    assert (settings.split, settings.videos, settings.trajectories) == ("test", 6, "t.jsonl")
    assert settings.models == ["sft", "seed1"] and settings.out == "out"
    assert settings.rules == "pixel-vlm" and settings.max_turns == 16
