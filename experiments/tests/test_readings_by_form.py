"""The per-form split of a bench run's VLM readings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.simulator.readings_by_form import (
    accuracy_by_policy_and_form,
    main,
    readings_by_form,
)

MCQ = {"sample_id": "v/n0/mcq", "policy": "a", "correct": True}
OPEN = {"sample_id": "v/n0/open", "policy": "a", "correct": False}
RECORDS = [
    {**MCQ, "vlm_readings": [[0.5, True], [0.4, False]]},
    {**OPEN, "vlm_readings": [[0.95, False], [0.7, True], [0.9, None]]},
    {"sample_id": "v/n1/open", "policy": "b", "correct": True, "vlm_readings": []},
]


def test_readings_split_by_form_with_confidences_of_right_and_wrong() -> None:
    split = readings_by_form(RECORDS)
    assert split["mcq"]["readings"] == 2 and split["mcq"]["accuracy"] == 0.5
    assert split["open"]["readings"] == 2, "ungraded readings are left out"
    assert split["open"]["confidence_wrong"] == 0.95 and split["open"]["above_0_9_wrong"] == 1.0
    assert split["open"]["confidence_right"] == 0.7 and split["open"]["above_0_9_right"] == 0.0
    assert accuracy_by_policy_and_form(RECORDS) == {
        ("a", "mcq"): 1.0,
        ("a", "open"): 0.0,
        ("b", "open"): 1.0,
    }


def test_the_command_prints_both_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "episodes.jsonl").write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n")
    assert main([str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "| open | 2 | 0.50 | 0.70 | 0.95 | 0.00 | 1.00 |" in printed
    assert "| b | open | 1.00 |" in printed
