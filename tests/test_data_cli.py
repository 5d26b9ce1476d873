"""``video-env data list`` and ``video-env data inspect``."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from video_env.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "data"


def test_data_list(capsys):
    assert main(["data", "list"]) == 0
    names = capsys.readouterr().out.split()
    assert "cg-bench" in names and "nextgqa" in names


def test_inspect_text_report(tmp_path, capsys):
    (tmp_path / "2482028659.mp4").touch()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the summary is printed, not warned
        code = main(
            ["data", "inspect", "nextgqa", "--annotations", str(FIXTURES / "nextgqa"),
             "--videos", str(tmp_path)]
        )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "3 samples, 2 videos" in out
    assert "3 MCQ, 0 open" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert lines["CW"].split()[1] == "1" and lines["TC"].split()[1] == "1"
    assert "with intervals: 3 / 3 (100.0 %), 1 intervals clipped" in out
    assert "known for 3 / 3; min 21.0, median 21.0, mean 30.7, max 50.0" in out
    assert f"missing videos: 1 files, e.g. {tmp_path / '5550001111.mp4'}" in out


def test_inspect_json_without_videos(capsys):
    code = main(
        ["data", "inspect", "egoschema", "--annotations", str(FIXTURES / "egoschema"), "--json"]
    )
    info = json.loads(capsys.readouterr().out)
    assert code == 0
    assert info["samples"] == 3 and info["unknown_answer"] == 1
    assert info["categories"] == {"(none)": 3}
    assert info["with_intervals"] == 0 and info["duration"] == {"known": 0}
    assert info["missing_videos"] is None


def test_inspect_filters_and_no_videos_message(capsys):
    args = ["data", "inspect", "lvbench", "--annotations", str(FIXTURES / "lvbench")]
    assert main([*args, "--category", "reasoning", "--limit", "5"]) == 0
    out = capsys.readouterr().out
    assert "(1 samples" in out and "videos: not checked" in out
    assert "duration: unknown for every sample" in out


def test_inspect_errors_exit_2(capsys):
    code = main(["data", "inspect", "kinetics", "--annotations", str(FIXTURES)])
    assert code == 2
    assert "unknown dataset 'kinetics'; known: cg-bench" in capsys.readouterr().err
    code = main(["data", "inspect", "nextqa", "--annotations", str(FIXTURES / "nope.csv")])
    assert code == 2 and "file not found" in capsys.readouterr().err


def test_inspect_requires_annotations():
    with pytest.raises(SystemExit):
        main(["data", "inspect", "nextqa"])
