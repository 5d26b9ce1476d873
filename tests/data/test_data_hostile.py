"""Loaders on hostile or odd files: paths out of the video root, deep JSON, BOMs, bad types."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from video_env.data import SkippedRecordsWarning, VideoPathError, available, load
from video_env.data._common import brief
from video_env.data._parsing import letter_of, strip_option_letters
from video_env.data.lvbench import split_options
from video_env.errors import ConfigError, DatasetError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "data"
DEEP = "[" * 100_000 + "]" * 100_000  # beyond the JSON parser's recursion limit

pytestmark = pytest.mark.filterwarnings("ignore::video_env.data.MissingVideosWarning")


def _json(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _csv(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


_HEADER = "frame_count,width,height,question,answer,qid,type,a0,a1,a2,a3,a4"


def annotations_pointing_at(dataset: str, ref: str, folder: Path) -> Path:
    """A one-record annotation file of ``dataset`` whose video is named by ``ref``.

    Loaders that build ``<id>.mp4`` from an id get ``ref`` as that id; the others
    (FALCON-Bench ``path``, JSONL ``video``, MLVU ``video``) get ``ref + ".mp4"``.
    """
    file = f"{ref}.mp4"
    five = {f"option {i}": f"o{i}" for i in range(5)}
    if dataset == "cg-bench":
        record = {"qid": 1, "video_uid": ref, "question": "Q?", "choices": ["a", "b"]}
        return _json(folder / "cgbench.json", [{**record, "right_answer": "A"}])
    if dataset == "egoschema":
        return _json(folder / "questions.json", [{"q_uid": ref, "question": "Q?", **five}])
    if dataset == "falcon-bench":
        record = {"question_id": "f1", "question": "Q?", "options": ["a", "b"], "path": file}
        return _json(folder / "FALCON-Bench.json", [{**record, "gt_option_idx": 0}])
    if dataset == "jsonl":
        record = {"id": "j", "video": file, "question": "Q?", "answer": "A", "options": ["a", "b"]}
        return _json(folder / "samples.json", [record])
    if dataset == "longvidsearch":
        record = {"vid": ref, "question": "Q?", "answer": "a", "evidence_slices": [1]}
        return _json(folder / "full-QA(3000).json", [record])
    if dataset == "lvbench":
        qa = {"uid": "1", "question": "Q? (A) a (B) b", "answer": "A"}
        path = folder / "video_info.meta.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"key": ref, "qa": [qa]}) + "\n")
        return path
    if dataset == "mlvu":
        record = {"video": file, "question": "Q?", "candidates": ["a", "b"], "answer": "a"}
        return _json(folder / "1_task.json", [record])
    if dataset == "nextqa":
        _json(folder / "map_vid_vidorID.json", {"7": ref})
        return _csv(folder / "val.csv", [f"video,{_HEADER}", "7,1,1,1,Q?,0,1,CW,a,b,c,d,e"])
    if dataset == "nextgqa":
        _json(folder / "map_vid_vidorID.json", {"7": ref})
        _json(folder / "gsub_val.json", {"7": {"duration": 10, "location": {}}})
        return _csv(folder / "val.csv", [f"video_id,{_HEADER}", "7,1,1,1,Q?,a,1,CW,a,b,c,d,e"])
    assert dataset == "video-mme"
    record = {"video_id": "1", "videoID": ref, "question_id": "1-1", "question": "Q?"}
    return _json(folder / "videomme.json", [{**record, "options": ["a", "b"], "answer": "A"}])


@pytest.fixture
def layout(tmp_path):
    """``(video root, a video file outside it)``: the root is ``<tmp>/data/videos``."""
    root = tmp_path / "data" / "videos"
    root.mkdir(parents=True)
    secret = tmp_path / "secret.mp4"
    secret.write_text("not yours")
    return root, secret


@pytest.mark.parametrize("dataset", available())
def test_relative_escape_from_the_video_root_is_refused(dataset, layout, tmp_path):
    root, _ = layout
    annotations = annotations_pointing_at(dataset, "../../secret", tmp_path / "ann")
    # the file exists: before the fix, missing="error" passed and the path was used
    with pytest.raises(VideoPathError, match=r"record 0: video path .*secret.* is not a file"):
        load(dataset, annotations, root, missing="error")
    with pytest.raises(VideoPathError):  # not skipped as a quirk either
        load(dataset, annotations, root)


@pytest.mark.parametrize("dataset", available())
def test_absolute_video_paths_need_an_opt_in(dataset, layout, tmp_path):
    root, secret = layout
    absolute = str(secret.with_suffix(""))
    annotations = annotations_pointing_at(dataset, absolute, tmp_path / "ann")
    with pytest.raises(VideoPathError, match=r"record 0: video path .* is absolute"):
        load(dataset, annotations, root, missing="error")
    samples = load(dataset, annotations, root, missing="error", allow_absolute=True)
    assert samples[0].video == str(secret) and samples.missing_videos == ()


@pytest.mark.parametrize("dataset", ["cg-bench", "falcon-bench", "nextqa"])
def test_paths_inside_the_root_still_load_and_normalise(dataset, layout, tmp_path):
    root, _ = layout
    annotations = annotations_pointing_at(dataset, "sub/../clip", tmp_path / "ann")
    (root / "clip.mp4").touch()
    samples = load(dataset, annotations, root, missing="error")
    assert samples[0].video == str(root / "clip.mp4")
    # without a root, relative paths are kept relative and the same rule applies
    assert load(dataset, annotations)[0].video == "clip.mp4"
    escape = annotations_pointing_at(dataset, "../clip", tmp_path / "ann2")
    with pytest.raises(VideoPathError, match="working directory"):
        load(dataset, escape)


def test_a_nul_byte_in_a_video_path_is_refused(layout, tmp_path):
    root, _ = layout
    annotations = annotations_pointing_at("falcon-bench", "clip\x00", tmp_path / "ann")
    with pytest.raises(VideoPathError, match="NUL byte"):
        load("falcon-bench", annotations, root)


def test_a_symlink_inside_the_root_is_the_users_to_trust(layout, tmp_path):
    # paths are checked lexically: video folders are often links to other disks
    root, secret = layout
    (root / "linked.mp4").symlink_to(secret)
    annotations = annotations_pointing_at("cg-bench", "linked", tmp_path / "ann")
    samples = load("cg-bench", annotations, root, missing="error")
    assert samples[0].video == str(root / "linked.mp4")


# --- deeply nested JSON -----------------------------------------------------------------


@pytest.mark.parametrize("dataset", ["jsonl", "lvbench"])
def test_deeply_nested_json_line_is_a_dataset_error(dataset, tmp_path):
    if dataset == "jsonl":
        good = {"id": "j", "video": "v.mp4", "question": "Q?", "answer": "A", "options": ["a", "b"]}
    else:
        good = {"key": "v", "qa": [{"uid": "1", "question": "Q? (A) a (B) b", "answer": "A"}]}
    path = tmp_path / ("video_info.meta.jsonl" if dataset == "lvbench" else "samples.jsonl")
    path.write_text(f"{DEEP}\n{json.dumps(good)}\n")
    with pytest.raises(DatasetError, match=r"record 0: JSON nested too deeply"):
        load(dataset, path, strict=True)
    with pytest.warns(SkippedRecordsWarning, match="nested too deeply"):
        samples = load(dataset, path)
    assert len(samples) == 1 and len(samples.skipped_records) == 1


def test_deeply_nested_json_file_is_a_dataset_error(tmp_path):
    path = tmp_path / "cgbench.json"
    path.write_text(DEEP)
    with pytest.raises(DatasetError, match=r"cgbench\.json: cannot read JSON: .*nested too deep"):
        load("cg-bench", path)


def test_deep_values_inside_a_record_are_skipped_not_crashing(tmp_path):
    # parseable, but too deep for repr() in an error message: reported briefly
    deep = "[" * 900 + "]" * 900
    record = '{"id": "d", "video": "v.mp4", "question": "Q?", "answer": "A", "options": %s}'
    path = tmp_path / "s.jsonl"
    path.write_text(record % deep + "\n")
    with pytest.raises(DatasetError, match=r"record 0: an option must be text, got \[\[\[\["):
        load("jsonl", path, strict=True)


# --- options that are not a list ----------------------------------------------------------


def test_jsonl_string_options_are_refused(tmp_path):
    record = {"id": "s", "video": "v.mp4", "question": "Q?", "answer": "A", "options": "redblue"}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(DatasetError, match=r"record 0: options must be a list, got 'redblue'"):
        load("jsonl", path, strict=True)
    with pytest.warns(SkippedRecordsWarning):
        samples = load("jsonl", path)
    assert list(samples) == [] and samples.skipped_records[0].id == "s"


@pytest.mark.parametrize("dataset", ["cg-bench", "falcon-bench", "mlvu", "video-mme"])
def test_string_options_are_refused_by_every_list_loader(dataset, tmp_path):
    path = annotations_pointing_at(dataset, "clip", tmp_path)
    records = json.loads(path.read_text())
    key = {"cg-bench": "choices", "mlvu": "candidates"}.get(dataset, "options")
    records[0][key] = "ab"
    path.write_text(json.dumps(records))
    with pytest.raises(DatasetError, match=r"record 0: options must be a list, got 'ab'"):
        load(dataset, path, strict=True)


# --- byte-order marks ---------------------------------------------------------------------


@pytest.mark.parametrize(("dataset", "folder"), [("nextqa", "nextqa"), ("nextgqa", "nextgqa")])
def test_csv_with_a_utf8_bom_loads(dataset, folder, tmp_path):
    shutil.copytree(FIXTURES / folder, tmp_path / folder)
    csv = tmp_path / folder / "val.csv"
    csv.write_bytes(b"\xef\xbb\xbf" + csv.read_bytes())
    assert [s.id for s in load(dataset, csv)] == [s.id for s in load(dataset, FIXTURES / folder)]


@pytest.mark.parametrize(
    ("dataset", "name"), [("cg-bench", "cgbench.json"), ("lvbench", "video_info.meta.jsonl")]
)
def test_json_with_a_utf8_bom_loads(dataset, name, tmp_path):
    source = FIXTURES / dataset.replace("-", "_") / name
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + source.read_bytes())
    assert [s.id for s in load(dataset, path)] == [s.id for s in load(dataset, source)]


def test_jsonl_records_may_hold_unicode_line_separators(tmp_path):
    record = {"id": "u", "video": "v.mp4", "question": "Q?\u2028really?\x85", "answer": "x"}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(record, ensure_ascii=False) + "\r\n", encoding="utf-8")
    assert load("jsonl", path, strict=True)[0].question == "Q?\u2028really?\x85"


# --- out-of-range numbers, too many options, wrong types (issue 62) ------------------------

_ID_FIELD = {
    "cg-bench": "qid",
    "falcon-bench": "question_id",
    "jsonl": "id",
    "video-mme": "question_id",
}
_OPTIONS_FIELD = {"cg-bench": "choices", "mlvu": "candidates"}


def _with_a_bad_record(dataset: str, folder: Path, **bad: object) -> Path:
    """The one-record file of :func:`annotations_pointing_at` plus a second, bad record."""
    path = annotations_pointing_at(dataset, "clip", folder)
    good = json.loads(path.read_text())[0]
    record = {**good, **bad}
    if dataset in _ID_FIELD:
        record[_ID_FIELD[dataset]] = 2 if dataset == "cg-bench" else "bad"
    path.write_text(json.dumps([good, record]))
    return path


def _only_the_bad_record_is_skipped(dataset: str, path: Path, message: str) -> None:
    with pytest.warns(SkippedRecordsWarning):
        samples = load(dataset, path)
    assert len(samples) >= 1 and all(s.id != "bad" for s in samples)
    [issue] = samples.skipped_records
    assert issue.index == 1 and re.search(message, issue.message), issue.message
    assert len(issue.message) < 200  # a 400-digit number is abbreviated
    with pytest.raises(DatasetError, match=rf"record 1\b.*{message}"):
        load(dataset, path, strict=True)


@pytest.mark.parametrize(
    ("dataset", "field", "value"),
    [
        ("cg-bench", "duration", 10**400),
        ("falcon-bench", "duration", 10**400),
        ("mlvu", "duration", 10**400),
        ("jsonl", "duration", 10**400),
        ("cg-bench", "clue_intervals", [[0, 10**400]]),
        ("falcon-bench", "gt_time_interval", [0, 10**400]),
        ("jsonl", "gt_intervals", [[0, 10**400]]),
        ("falcon-bench", "duration", "1e400"),
        ("mlvu", "duration", 1e9),
        ("cg-bench", "clue_intervals", [["0:00", "999999:00"]]),
    ],
    ids=lambda value: brief(value) if isinstance(value, (int, list)) else None,
)
def test_a_number_out_of_range_skips_only_its_record(dataset, field, value, tmp_path):
    path = _with_a_bad_record(dataset, tmp_path, **{field: value})
    _only_the_bad_record_is_skipped(
        dataset, path, "out of range|must be finite|over the maximum of 604800 s|MAX_DURATION_S"
    )


@pytest.mark.parametrize("dataset", ["cg-bench", "falcon-bench", "jsonl", "mlvu", "video-mme"])
def test_more_than_26_options_skip_only_their_record(dataset, tmp_path):
    options = ["a", *(f"o{i}" for i in range(1, 27))]
    path = _with_a_bad_record(
        dataset, tmp_path, **{_OPTIONS_FIELD.get(dataset, "options"): options}
    )
    _only_the_bad_record_is_skipped(dataset, path, r"27 options: at most 26 \(A-Z\)")


def test_option_letters_stop_at_z():
    assert letter_of(25) == "Z"
    with pytest.raises(ValueError, match="at most 26 options"):
        letter_of(26)
    lettered = [f"{chr(65 + i % 26)}. x{i}" for i in range(27)]
    assert strip_option_letters(lettered) == tuple(lettered)  # no crash; left as they are


def test_lvbench_option_marks_past_z_do_not_crash():
    text = "Q? " + " ".join(f"({chr(65 + i)}) o{i}" for i in range(26)) + " (A) again"
    question, options = split_options(text)
    assert question == "Q?" and len(options) == 26 and options[-1] == "o25 (A) again"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("duration", True, "duration must be a number, got True"),
        ("id", {"nested": 1}, "sample id must be text or an integer"),
        ("id", True, "sample id must be text or an integer"),
        ("answer", {"text": "x"}, "answer must be text"),
        ("category", 5, "category must be text"),
        ("source", ["x"], "source must be text"),
        ("meta", [["k", "v"]], "meta must be an object"),
        ("meta", {"splits": 5}, "meta.splits must be a list of names"),
        ("answer", " ", "an open question's answer is empty"),
        ("id", "x\ud800", "id holds a lone surrogate"),  # valid JSON, no UTF-8 text
        ("category", "c\udc80", "category holds a lone surrogate"),
        ("question", "Q\ud800?", "question holds a lone surrogate"),
    ],
)
def test_jsonl_fields_of_the_wrong_type_skip_only_their_record(field, value, message, tmp_path):
    good = {"id": "good", "video": "v.mp4", "question": "Q?", "answer": "an open answer"}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "id": "bad", field: value}))
    _only_the_bad_record_is_skipped("jsonl", path, re.escape(message))


def test_a_jsonl_integer_too_long_to_parse_skips_only_its_line(tmp_path):
    good = {"id": "good", "video": "v.mp4", "question": "Q?", "answer": "x"}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(good) + '\n{"id": "bad", "duration": ' + "9" * 5000 + "}\n")
    _only_the_bad_record_is_skipped("jsonl", path, "invalid JSON: Exceeds the limit")


def test_a_jsonl_split_given_as_one_name_is_that_split_not_its_letters(tmp_path):
    record = {"id": "j", "video": "v.mp4", "question": "Q?", "answer": "x"}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({**record, "meta": {"splits": "test"}}) + "\n")
    assert [s.id for s in load("jsonl", path, split="test")] == ["j"]
    with pytest.raises(ConfigError, match="unknown split 't'"):
        load("jsonl", path, split="t")


def test_a_video_path_no_file_system_holds_refuses_the_file(tmp_path):
    record = {"id": "j", "video": "v\ud800.mp4", "question": "Q?", "answer": "x"}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(VideoPathError, match="no file name"):
        load("jsonl", path)


@pytest.mark.parametrize(
    ("dataset", "blank"),
    [("falcon-bench", {"gt_answer": " "}), ("cg-bench", {"answer": " "})],
)
def test_a_blank_open_answer_falls_back_to_the_right_option_in_both_forms(dataset, blank, tmp_path):
    annotations = annotations_pointing_at(dataset, "clip", tmp_path / "ann")
    (record,) = json.loads(annotations.read_text())
    _json(annotations, [{**record, **blank}])
    samples = load(dataset, annotations, tmp_path / "videos", form="both")
    assert sorted((s.options is None, s.answer) for s in samples) == [(False, "A"), (True, "a")]
