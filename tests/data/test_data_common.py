"""Shared loader behaviour: parsing helpers, missing videos, filters, registry, JSONL."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from video_env import data
from video_env.data import (
    MissingVideosWarning,
    SampleList,
    SkippedRecordsWarning,
    load_jsonl,
    load_nextqa,
    parse_time_range,
    parse_timestamp,
    save_jsonl,
    strip_option_letters,
)
from video_env.data._answers import answer_letter
from video_env.data._common import RecordContext
from video_env.errors import ConfigError, DatasetError, UnknownNameError
from video_env.types import Interval, VideoQA

FIXTURES = Path(__file__).parents[1] / "fixtures" / "data"
NEXTQA = FIXTURES / "nextqa"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("00:15", 15.0),
        ("12:03", 723.0),
        ("75:10", 4510.0),
        ("1:02:10", 3730.0),
        ("01:00:00.5", 3600.5),
    ],
)
def test_parse_timestamp(text, seconds):
    assert parse_timestamp(text) == seconds


@pytest.mark.parametrize("text", ["", "15", "1:2:3:4", "aa:bb", "00:75", "1:60:00"])
def test_parse_timestamp_rejects(text):
    with pytest.raises(ValueError, match="timestamp"):
        parse_timestamp(text)


def test_parse_time_range():
    assert parse_time_range("03:13-03:18") == (193.0, 198.0)
    assert parse_time_range(" 1:00:00 - 1:00:30 ") == (3600.0, 3630.0)
    with pytest.raises(ValueError, match="time range"):
        parse_time_range("03:13")


def test_strip_option_letters():
    assert strip_option_letters(["A. x", "B. y"]) == ("x", "y")
    assert strip_option_letters(["(A) x", "(B) y", "(C) z"]) == ("x", "y", "z")
    assert strip_option_letters(["A) x", "B: y"]) == ("x", "y")
    # out of order or partial prefixes are text, not labels
    assert strip_option_letters(["B. x", "A. y"]) == ("B. x", "A. y")
    assert strip_option_letters(["A. x", "y"]) == ("A. x", "y")
    assert strip_option_letters(["A cat", "B dog"]) == ("A cat", "B dog")


def test_answer_letter_kinds():
    ctx = RecordContext(Path("f.json"))
    options = ("2", "3", "1")
    assert answer_letter(ctx, options, "(b)", 0, "letter") == "B"
    assert answer_letter(ctx, options, "2", 0, "index") == "C"
    assert answer_letter(ctx, options, 0, 0, "index") == "A"
    assert answer_letter(ctx, options, "2", 0, "text") == "A"
    assert answer_letter(ctx, ("Red", "Blue"), "blue ", 0, "text") == "B"
    with pytest.raises(DatasetError, match=r"f\.json, record 4: answer 'D'"):
        answer_letter(ctx, options, "D", 4, "letter")
    with pytest.raises(DatasetError, match="record 0"):
        answer_letter(ctx, options, True, 0, "index")


def test_intervals_clip_within_tolerance_and_reject_beyond():
    ctx = RecordContext(Path("a.json"))
    assert ctx.intervals([[1, 2], [9.5, 10.9]], 10.0, 0) == (Interval(1, 2), Interval(9.5, 10))
    assert ctx.clipped == 1
    assert ctx.intervals([[5, 20]], None, 0) == (Interval(5, 20),)  # unknown duration
    with pytest.raises(DatasetError, match=r"a\.json, record 3: interval \[9.0, 11.5\]"):
        ctx.intervals([[9, 11.5]], 10.0, 3)
    with pytest.raises(DatasetError, match="bad interval"):
        ctx.intervals([[5, 4]], None, 0)
    with pytest.raises(DatasetError, match="pair"):
        ctx.intervals([[1, 2, 3]], None, 0)
    with pytest.raises(DatasetError, match="number"):
        ctx.intervals([["a", 2]], None, 0)


# --- missing videos -------------------------------------------------------------------------


@pytest.fixture
def video_root(tmp_path):
    """Has the first NExT-QA fixture video (an empty file: never opened) but not the other."""
    (tmp_path / "1006").mkdir()
    (tmp_path / "1006" / "4010069381.mp4").touch()
    return tmp_path


def test_missing_videos_keep_warns_once_with_a_summary(video_root):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        samples = load_nextqa(NEXTQA, video_root)
    missing = [w for w in caught if issubclass(w.category, MissingVideosWarning)]
    assert len(missing) == 1
    message = str(missing[0].message)
    assert "1 samples have no video" in message and "0021/7771234567.mp4" in message
    assert missing[0].filename == __file__  # points at the caller
    assert len(samples) == 3
    assert samples.missing_videos == (str(video_root / "0021" / "7771234567.mp4"),)
    assert samples.skipped == 0


def test_missing_videos_skip_and_error(video_root):
    with pytest.warns(MissingVideosWarning, match="skipped"):
        samples = load_nextqa(NEXTQA, video_root, missing="skip")
    assert [s.id for s in samples] == ["4010069381_6", "4010069381_7"]
    assert samples.skipped == 1
    with pytest.raises(DatasetError, match=r"val\.csv: nextqa: 1 samples have no video"):
        load_nextqa(NEXTQA, video_root, missing="error")
    with pytest.raises(ConfigError, match="missing"):
        load_nextqa(NEXTQA, video_root, missing="ignore")  # type: ignore[arg-type]


def test_no_video_root_checks_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        samples = load_nextqa(NEXTQA, missing="error")
    assert samples.missing_videos is None and samples[0].video == "1006/4010069381.mp4"


def test_limit_counts_kept_samples_and_checks_only_those(video_root):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the missing video lies beyond the limit
        assert len(load_nextqa(NEXTQA, video_root, limit=2, missing="error")) == 2
    assert len(load_nextqa(NEXTQA, limit=0)) == 0
    with pytest.raises(ConfigError, match="limit"):
        load_nextqa(NEXTQA, limit=-1)


def test_loading_never_opens_videos(tmp_path):
    # the "video" exists but is not a video; loading must not care
    (tmp_path / "1006").mkdir()
    (tmp_path / "1006" / "4010069381.mp4").write_text("not a video")
    samples = load_nextqa(NEXTQA, tmp_path, limit=1, missing="error")
    assert samples.missing_videos == ()


# --- malformed files ------------------------------------------------------------------------


def test_malformed_json_and_records_name_file_and_index(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text("[{")
    with pytest.raises(DatasetError, match=r"broken\.json: cannot read JSON"):
        data.load_cg_bench(bad)
    rec = {"qid": 1, "video_uid": "v", "question": "Q?", "choices": ["a", "b"], "right_answer": "A"}
    path = tmp_path / "cg.json"
    path.write_text(json.dumps([rec, {**rec, "qid": 2, "question": ""}]))
    with pytest.raises(DatasetError, match=r"cg\.json, record 1: field 'question'"):
        data.load_cg_bench(path, strict=True)
    path.write_text(json.dumps([rec, {k: v for k, v in rec.items() if k != "video_uid"}]))
    with pytest.raises(DatasetError, match=r"record 1: missing field 'video_uid'"):
        data.load_cg_bench(path, strict=True)
    path.write_text(json.dumps([rec, rec]))
    with pytest.raises(DatasetError, match="record 1: duplicate sample id '1-mcq'"):
        data.load_cg_bench(path, strict=True)
    # without strict, the repeat is skipped and reported
    with pytest.warns(SkippedRecordsWarning, match="1 malformed records skipped"):
        samples = data.load_cg_bench(path)
    assert [s.id for s in samples] == ["1-mcq"]
    assert [(i.id, i.message) for i in samples.skipped_records] == [
        ("1-mcq", "duplicate sample id")
    ]
    with pytest.raises(DatasetError, match="file not found"):
        data.load_cg_bench(tmp_path / "absent.json")


# --- registry -------------------------------------------------------------------------------


def test_registry_names_and_lookup():
    assert data.available() == [
        "cg-bench",
        "egoschema",
        "falcon-bench",
        "jsonl",
        "longvidsearch",
        "lvbench",
        "mlvu",
        "nextgqa",
        "nextqa",
        "video-mme",
    ]
    assert data.get_loader("CG_Bench") is data.load_cg_bench
    assert data.get_loader("videomme") is data.load_video_mme
    samples = data.load("nextqa", NEXTQA, None, categories=["CH"])
    assert isinstance(samples, SampleList) and [s.id for s in samples] == ["4010069381_6"]
    assert samples.dataset == "nextqa"


def test_registry_unknown_name_lists_known():
    with pytest.raises(UnknownNameError, match=r"unknown dataset 'kinetics'; known: cg-bench, "):
        data.load("kinetics", NEXTQA)


def test_register_loader(monkeypatch):
    monkeypatch.setattr(data, "_LOADERS", dict(data._LOADERS))
    data.register_loader("my-bench", data.load_nextqa)
    assert "my-bench" in data.available()
    assert len(data.load("My_Bench", NEXTQA)) == 3
    with pytest.raises(ConfigError, match="already registered"):
        data.register_loader("nextqa", data.load_nextgqa)


# --- our JSONL format -----------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::video_env.data.MissingVideosWarning")
def test_jsonl_round_trip_with_relative_paths(tmp_path):
    videos = tmp_path / "videos"
    samples = data.load_nextgqa(FIXTURES / "nextgqa", videos)
    out = save_jsonl(samples, tmp_path / "export" / "gqa.jsonl", video_root=videos)
    first = json.loads(out.read_text().splitlines()[0])
    assert first["video"] == "2482028659.mp4"  # relative to the root
    back = load_jsonl(out, videos)
    assert list(back) == list(samples)
    # without a root, relative paths resolve against the file's folder
    moved = load_jsonl(out)
    assert moved[0].video == str(tmp_path / "export" / "2482028659.mp4")
    assert moved.missing_videos and len(moved.missing_videos) == 2


def test_jsonl_malformed_record(tmp_path):
    path = tmp_path / "s.jsonl"
    good = VideoQA("a", "a.mp4", "Q?", "A", options=("x", "y")).to_dict()
    bad = {**good, "id": "b", "answer": "C"}
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(DatasetError, match=r"s\.jsonl, record 1: .*answer must be an option"):
        load_jsonl(path, strict=True)
    path.write_text(json.dumps({k: v for k, v in good.items() if k != "question"}) + "\n")
    with pytest.raises(DatasetError, match="record 0: missing field 'question'"):
        load_jsonl(path, strict=True)
    path.write_text("{not json\n")
    with pytest.raises(DatasetError, match="record 0: invalid JSON"):
        load_jsonl(path, strict=True)
