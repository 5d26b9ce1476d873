"""The laboratory's commands: the library's flags plus the lab's, recorded as they ran."""

import json
from pathlib import Path

import pytest

from experiments.videoscout_pixel.__main__ import main


def test_the_labs_distill_records_its_own_command(tmp_path: Path) -> None:
    out = tmp_path / "distilled"
    args = ["distill", "--teacher", "scripted-ground-truth", "--suite", "synth-tiny"]
    assert main([*args, "--limit", "1", "--rules", "cpu-smoke", "--out", str(out)]) == 0
    record = json.loads((out / "distill.json").read_text())
    assert record["command"].startswith("python -m experiments.videoscout_pixel distill ")


def test_the_labs_flags_are_checked_before_anything_runs(tmp_path: Path) -> None:
    args = ["--teacher", "scripted-ground-truth", "--guess-share", "0.5", "--out", str(tmp_path)]
    assert main(["distill", *args]) == 2  # a setting of the frame teacher only
    assert not any(tmp_path.iterdir())


def test_a_teacher_that_may_guess_needs_a_try_per_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["distill", "--teacher", "scripted-frames:lead", "--suite", "synth-tiny"]
    for flag in (["--guess-share", "0.25"], ["--steady-speed", "2"]):
        assert main([*base, *flag, "--tries", "1", "--out", str(tmp_path / "d")]) == 2
        assert "need --tries >= 4" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
