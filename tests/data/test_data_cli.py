"""``video-env data list`` and ``video-env data inspect``."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from video_env.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "data"


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


QUIRKS = FIXTURES / "quirks"


def test_inspect_reports_skipped_and_repaired_records(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the summaries are printed, not warned
        code = main(["data", "inspect", "egoschema", "--annotations", str(QUIRKS / "egoschema")])
    out = capsys.readouterr().out
    assert code == 0 and "(2 samples" in out
    assert "skipped malformed records: 2" in out
    assert "questions.json record 1 (ego-q2): every option is empty" in out
    assert "questions.json record 3 (ego-q4): the correct option B is empty" in out
    assert "records kept with a harmless defect: 1" in out
    assert "questions.json record 0 (ego-q1): empty option C kept as '(empty option)'" in out


def test_inspect_json_lists_records_and_strict_refuses(capsys):
    args = ["data", "inspect", "video-mme", "--annotations", str(QUIRKS / "video_mme")]
    assert main([*args, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert [(r["index"], r["id"]) for r in info["skipped_records"]] == [(0, "901-2")]
    assert [r["id"] for r in info["repaired_records"]] == ["901-1"]
    assert main([*args, "--strict"]) == 2
    assert "videomme.json, record 0: every option is empty" in capsys.readouterr().err


def test_inspect_refuses_absolute_paths_unless_allowed(tmp_path, capsys):
    video = tmp_path / "elsewhere.mp4"
    video.touch()
    record = {"question_id": "q", "question": "Q?", "options": ["a", "b"], "gt_option_idx": 0}
    annotations = tmp_path / "fb.json"
    annotations.write_text(json.dumps([{**record, "path": str(video)}]))
    args = ["data", "inspect", "falcon-bench", "--annotations", str(annotations)]
    args += ["--videos", str(tmp_path / "videos"), "--missing", "error"]
    assert main(args) == 2
    assert "record 0: video path" in capsys.readouterr().err
    assert main([*args, "--allow-absolute-paths"]) == 0
    assert "videos: all present" in capsys.readouterr().out
