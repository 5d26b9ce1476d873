"""Loaders on the real annotation samples in ../shared/data/annotations (when present).

The raw files are parsed here independently (json/csv) and compared with the samples.
Set VIDEO_ENV_SHARED_DATA to the shared ``data`` folder (or to its ``annotations``
folder) when the repository is not checked out beside ``shared/``.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from video_env.data import load
from video_env.types import OPTION_LETTERS, Interval


def _annotations_dir() -> Path | None:
    candidates = []
    if os.environ.get("VIDEO_ENV_SHARED_DATA"):
        root = Path(os.environ["VIDEO_ENV_SHARED_DATA"])
        candidates += [root / "annotations", root]
    candidates.append(Path(__file__).resolve().parents[3] / "shared" / "data" / "annotations")
    for path in candidates:
        if (path / "nextqa").is_dir() or (path / "egoschema").is_dir():
            return path
    return None


ANNOTATIONS = _annotations_dir()
pytestmark = pytest.mark.skipif(ANNOTATIONS is None, reason="shared annotations not present")


def folder(name: str) -> Path:
    path = (ANNOTATIONS or Path()) / name
    if not path.is_dir():
        pytest.skip(f"{path} not present")
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_egoschema_real_questions_and_answers():
    root = folder("egoschema")
    questions = json.loads((root / "questions.json").read_text())
    answers = json.loads((root / "subset_answers.json").read_text())
    samples = load("egoschema", root)
    assert len(samples) == len(questions) == 20
    for sample, raw in zip(samples, questions, strict=True):
        assert sample.id == raw["q_uid"]
        assert sample.question == raw["question"].strip()
        assert sample.options == tuple(raw[f"option {i}"].strip() for i in range(5))
        expected = answers.get(raw["q_uid"])
        assert sample.answer == (None if expected is None else OPTION_LETTERS[expected])
        assert sample.video == f"{raw['q_uid']}.mp4"
    # the preview questions are not in the public 500-answer subset: all unknown
    public = [q for q in questions if q["q_uid"] in answers]
    assert sum(s.has_answer for s in samples) == len(public) == 0
    assert samples.skipped_records == samples.repaired_records == ()
    assert len(load("egoschema", root, split="subset")) == 0
    assert len(load("egoschema", root, split="fullset")) == 20


def test_nextqa_real_rows():
    root = folder("nextqa")
    rows = read_csv(root / "val.csv")
    samples = load("nextqa", root)
    assert len(samples) == len(rows) == 4996
    assert len({s.id for s in samples}) == len(samples)
    for sample, row in zip(samples, rows, strict=True):
        assert sample.id == f"{row['video']}_{row['qid']}"
        assert sample.options == tuple(row[f"a{i}"].strip() for i in range(5))
        assert sample.answer == "ABCDE"[int(row["answer"])]
        assert sample.category == row["type"]
        assert sample.meta["frame_count"] == int(row["frame_count"])
        assert sample.gt_intervals == () and sample.duration is None
    # the real quirks: three rows repeat an option text; kept, reported, nothing skipped
    assert samples.skipped_records == ()
    assert [(i.index, i.id, i.message) for i in samples.repaired_records] == [
        (624, "5256928210_7", "options A and E are both 'scarf'"),
        (3570, "13884293626_2", "options B and D are both 'resting'"),
        (3844, "3263908208_7", "options B and D are both 'red'"),
    ]
    counts = {t: sum(r["type"] == t for r in rows) for t in {r["type"] for r in rows}}
    assert len(load("nextqa", root, categories=["TN"])) == counts["TN"]


def test_nextgqa_real_rows_and_intervals():
    root = folder("nextgqa")
    rows = read_csv(root / "val.csv")
    grounding = json.loads((root / "gsub_val.json").read_text())
    samples = load("nextgqa", root)
    assert len(samples) == len(rows) == 3358
    overshoot = 0
    for sample, row in zip(samples, rows, strict=True):
        info = grounding[row["video_id"]]
        duration = float(info["duration"])
        assert sample.id == f"{row['video_id']}_{row['qid']}"
        # the loader strips stray whitespace (some raw options end with a space)
        assert sample.answer_text == row["answer"].strip()
        assert sample.options == tuple(row[f"a{i}"].strip() for i in range(5))
        assert sample.duration == duration
        raw = info["location"][row["qid"]]
        assert len(sample.gt_intervals) == len(raw) >= 1
        for got, (start, end) in zip(sample.gt_intervals, raw, strict=True):
            overshoot += end > duration
            assert got == Interval(min(start, duration), min(end, duration))
            assert got.end <= sample.duration
    assert samples.clipped_intervals == overshoot == 3
    assert samples.skipped_records == ()
    assert [i.id for i in samples.repaired_records] == ["5256928210_7"]
