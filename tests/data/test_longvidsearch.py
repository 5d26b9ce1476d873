"""The LongVidSearch loader on records in its released format (yrywill/LongVidSearch)."""

import json
from pathlib import Path

import pytest

from video_env import data
from video_env.data.longvidsearch import clip_window, evidence_recall, load_longvidsearch
from video_env.errors import DatasetError
from video_env.types import Interval

#: Two records of dataset/-7wwfGJXEZg_qa.json as released (texts shortened).
PER_VIDEO = [
    {
        "question": "What year is shown at the start of the video, and later what later year "
        "is used for a population estimate of Rome?",
        "answer": "534 A.D. is shown at the start, and 536 A.D. is later used for a "
        "population estimate of Rome.",
        "category": "Global_Summary",
        "hop_level": "2-Hop",
        "evidence_slices": [1, 48],
        "reasoning_chain": "Step 1: Slice 1 includes an on-screen date stating 534 A.D. ...",
        "logic_check_reasoning": "Step 1: ...",
        "visual_proof": "Clip 1 clearly displays the text '534 A.D.' ...",
    },
    {
        "question": "Which source text is shown as an open book and later shown again as a "
        "close-up page with a different chapter number?",
        "answer": 'Procopius\u2019s "History of the Wars."',
        "category": "State_Mutation",
        "hop_level": "2-Hop",
        "evidence_slices": [53, 22],
        "reasoning_chain": "Step 1: Slice 22 shows an open book ...",
    },
]


def write(path: Path, records: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_per_video_files_map_evidence_clips_to_windows(tmp_path: Path) -> None:
    write(tmp_path / "dataset" / "-7wwfGJXEZg_qa.json", PER_VIDEO)
    samples = data.load("longvidsearch", tmp_path)
    assert [s.id for s in samples] == ["-7wwfGJXEZg/0", "-7wwfGJXEZg/1"]
    first, second = samples
    assert first.options is None and str(first.answer).startswith("534 A.D.")
    assert first.gt_intervals == (Interval(0.0, 30.0), Interval(1410.0, 1440.0))
    assert second.meta["evidence_clips"] == [22, 53]  # sorted
    assert second.gt_intervals[0] == clip_window(22) == Interval(630.0, 660.0)
    assert first.category == "Global_Summary" and first.meta["hop_level"] == "2-Hop"
    assert str(first.video).endswith("-7wwfGJXEZg.mp4")


def test_the_full_file_names_each_records_video(tmp_path: Path) -> None:
    records = [dict(PER_VIDEO[0], vid="-7wwfGJXEZg"), dict(PER_VIDEO[1], vid="02jQiIkEGh8")]
    write(tmp_path / "full-QA(3000).json", records)
    samples = load_longvidsearch(tmp_path)
    assert [s.meta["vid"] for s in samples] == ["-7wwfGJXEZg", "02jQiIkEGh8"]
    assert [s.id for s in samples] == ["-7wwfGJXEZg/0", "02jQiIkEGh8/1"]


def test_bad_records_are_skipped_or_raised(tmp_path: Path) -> None:
    bad = [dict(PER_VIDEO[0], evidence_slices=[0]), dict(PER_VIDEO[1], evidence_slices="1,2")]
    path = write(tmp_path / "x_qa.json", [*bad, PER_VIDEO[0]])
    with pytest.warns(data.SkippedRecordsWarning, match="2 malformed records"):
        samples = load_longvidsearch(path, strict=False)
    assert len(samples) == 1 and samples[0].id == "x/2"
    with pytest.raises(DatasetError, match="clip number"):
        load_longvidsearch(path, strict=True)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="no full-QA"):
        load_longvidsearch(tmp_path / "empty")


def test_evidence_recall_is_the_share_of_gold_clips_named() -> None:
    assert evidence_recall([1, 48, 7], [1, 48]) == 1.0
    assert evidence_recall([48], [1, 48]) == 0.5
    assert evidence_recall([], []) == 0.0
