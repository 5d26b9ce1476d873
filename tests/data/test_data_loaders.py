"""Each benchmark loader on the small fixture files shipped in tests/fixtures/data/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from video_env.data import (
    load_cg_bench,
    load_egoschema,
    load_falcon_bench,
    load_lvbench,
    load_mlvu,
    load_nextgqa,
    load_nextqa,
    load_video_mme,
)
from video_env.errors import ConfigError, DatasetError
from video_env.types import Interval

FIXTURES = Path(__file__).parents[1] / "fixtures" / "data"

# Most fixtures have no videos; the summary warning is tested in test_data_common.py.
pytestmark = pytest.mark.filterwarnings("ignore::video_env.data.MissingVideosWarning")


def by_id(samples):
    return {s.id: s for s in samples}


# --- FALCON-Bench -------------------------------------------------------------------------


def test_falcon_bench_both_forms_drop_padding_and_parse_intervals():
    samples = by_id(load_falcon_bench(FIXTURES / "falcon_bench", "/videos"))
    assert len(samples) == 6
    mcq, oq = samples["fb-001-mcq"], samples["fb-001-open"]
    assert mcq.options == ("BAKERY", "PHARMACY", "BANK")  # "N/A" padding dropped
    assert (mcq.answer, mcq.answer_text) == ("C", "BANK")
    assert oq.options is None and oq.answer == "BANK"
    assert mcq.meta["form"] == "mcq" and oq.meta["form"] == "open"
    assert mcq.video == "/videos/walking_tours/venice.mp4"
    assert mcq.gt_intervals == (Interval(120, 135),)
    # H:MM:SS timestamps; the end overshoots the 3600 s duration by 0.5 s -> clipped
    assert samples["fb-002-mcq"].gt_intervals == (Interval(3570, 3600),)
    # string index, no duration
    third = samples["fb-003-mcq"]
    assert third.answer == "B" and third.options == ("a cup", "a book")
    assert third.duration is None and third.category == "object"


def test_falcon_bench_single_form_split_and_categories():
    mcq = load_falcon_bench(FIXTURES / "falcon_bench", form="mcq")
    assert [s.id for s in mcq] == ["fb-001-mcq", "fb-002-mcq", "fb-003-mcq"]
    assert mcq.clipped_intervals == 1
    soccer = load_falcon_bench(FIXTURES / "falcon_bench", form="open", split="SoccerNet")
    assert [s.id for s in soccer] == ["fb-002-open"]
    text = load_falcon_bench(FIXTURES / "falcon_bench", categories=["text"])
    assert {s.id for s in text} == {"fb-001-mcq", "fb-001-open"}
    with pytest.raises(ConfigError, match="form"):
        load_falcon_bench(FIXTURES / "falcon_bench", form="essay")


def test_falcon_bench_answer_pointing_at_padding_is_an_error(tmp_path):
    record = json.loads((FIXTURES / "falcon_bench" / "FALCON-Bench.json").read_text())[0]
    record["gt_option_idx"] = 3  # an "N/A" slot
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([record, record]))
    with pytest.raises(DatasetError, match=r"bad\.json, record 0: answer 3"):
        load_falcon_bench(path, strict=True)


# --- CG-Bench -----------------------------------------------------------------------------


def test_cg_bench_letters_prefixes_intervals_and_meta_durations():
    samples = by_id(load_cg_bench(FIXTURES / "cg_bench" / "cgbench.json", "/v"))
    assert list(samples) == ["101-mcq", "102-mcq", "103-mcq"]
    first = samples["101-mcq"]
    assert first.answer == "B" and first.answer_text == "red"
    assert first.gt_intervals == (Interval(10, 14), Interval(30.5, 33.25))
    assert first.video == "/v/vid_a.mp4" and first.category == "Visual Perception"
    eight = samples["102-mcq"]
    assert len(eight.options or ()) == 8 and eight.options[0] == "one"  # "A. " stripped
    assert eight.answer == "C"
    # no duration in the record: taken from video_meta_info.json; no right_answer: from text
    last = samples["103-mcq"]
    assert last.duration == 1200.0 and last.answer == "B"
    assert last.gt_intervals == (Interval(1195, 1200.0),)  # clipped by 0.4 s


def test_cg_bench_open_form_and_domain_split():
    samples = load_cg_bench(FIXTURES / "cg_bench", form="open", split="Sports")
    assert [(s.id, s.answer, s.options) for s in samples] == [("103-open", "the visitors", None)]


def test_cg_bench_interval_far_beyond_duration_is_an_error(tmp_path):
    records = json.loads((FIXTURES / "cg_bench" / "cgbench.json").read_text())
    records[1]["clue_intervals"] = [[100, 130], [590, 605]]
    path = tmp_path / "cg.json"
    path.write_text(json.dumps(records))
    with pytest.raises(DatasetError, match=r"cg\.json, record 1: interval \[590.0, 605.0\]"):
        load_cg_bench(path, strict=True)


# --- LVBench ------------------------------------------------------------------------------


def test_lvbench_options_out_of_text_and_time_references():
    samples = by_id(load_lvbench(FIXTURES / "lvbench", "/lv"))
    assert list(samples) == ["1001", "1002", "2001"]
    first = samples["1001"]
    assert first.question == "What year appears in the opening caption?"
    assert first.options == ("1636", "1366", "1363", "1633")
    assert first.answer == "C" and first.gt_intervals == (Interval(15, 19),)
    assert first.video == "/lv/lv_cartoon_1.mp4"
    # a parenthesis in the question is not an option mark
    second = samples["1002"]
    assert second.question == "Why does the (small) dog run away?"
    assert second.options == (
        "it hears thunder",
        "a cat chases it",
        "it is hungry",
        "the owner calls it",
    )
    assert second.gt_intervals == (Interval(723, 760),)
    # options inline, H:MM:SS references
    third = samples["2001"]
    assert third.options == ("the captain", "the coach", "the goalkeeper", "the mayor")
    assert third.gt_intervals == (Interval(3730, 3780),)


def test_lvbench_categories_match_any_question_type_and_split_is_video_type():
    samples = load_lvbench(FIXTURES / "lvbench", categories=["event understanding"])
    assert [s.id for s in samples] == ["1002"]
    assert samples[0].category == "reasoning"
    assert [s.id for s in load_lvbench(FIXTURES / "lvbench", split="sport")] == ["2001"]
    with pytest.raises(ConfigError, match="known: cartoon, sport"):
        load_lvbench(FIXTURES / "lvbench", split="news")


def test_lvbench_question_without_options_is_an_error(tmp_path):
    path = tmp_path / "lv.jsonl"
    line = {"key": "k", "type": "tv", "qa": [{"uid": "1", "question": "Why?", "answer": "A"}]}
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(DatasetError, match=r"lv\.jsonl, record 0: .*no '\(A\)"):
        load_lvbench(path, strict=True)


# --- MLVU ---------------------------------------------------------------------------------


def test_mlvu_tasks_answers_and_generation(tmp_path):
    (tmp_path / "1_plotQA").mkdir()
    (tmp_path / "1_plotQA" / "movie101_66.mp4").touch()
    (tmp_path / "subPlot_1.mp4").touch()  # flat layout fallback
    samples = by_id(load_mlvu(FIXTURES / "mlvu", tmp_path))
    assert list(samples) == ["1_plotQA-0", "1_plotQA-1", "8_sub_scene-0"]
    first = samples["1_plotQA-0"]
    assert first.answer == "A" and first.options == ("Yellow", "Red", "Green", "Blue")
    assert first.video == str(tmp_path / "1_plotQA" / "movie101_66.mp4")
    assert first.duration == 246.0 and first.category == "plotQA"
    second = samples["1_plotQA-1"]
    assert second.options == ("a farm", "a ship", "a castle", "a school")
    assert second.answer == "C"
    gen = samples["8_sub_scene-0"]
    assert gen.options is None and gen.meta["generation"] is True
    assert gen.answer.startswith("The boy opens the door")
    assert gen.video == str(tmp_path / "subPlot_1.mp4")
    only_gen = load_mlvu(FIXTURES / "mlvu", split="generation")
    assert [s.id for s in only_gen] == ["8_sub_scene-0"]


def test_mlvu_answer_not_among_candidates(tmp_path):
    path = tmp_path / "3_ego.json"
    path.write_text(
        json.dumps([{"video": "e.mp4", "question": "Q?", "candidates": ["x", "y"], "answer": "z"}])
    )
    with pytest.raises(DatasetError, match=r"3_ego\.json, record 0: answer 'z'"):
        load_mlvu([path], strict=True)


# --- Video-MME ----------------------------------------------------------------------------


def test_video_mme_nested_form():
    samples = by_id(load_video_mme(FIXTURES / "video_mme", "/mme"))
    assert list(samples) == ["001-1", "001-2", "601-1"]
    first = samples["001-1"]
    assert first.options == (
        "Apples.",
        "Candles.",
        "Berries.",
        "The three kinds are of the same number.",
    )
    assert first.answer == "C" and first.duration is None
    assert first.video == "/mme/fFjv93ACGo8.mp4"
    assert first.meta["duration_bucket"] == "short" and first.category == "Counting Problem"
    assert samples["601-1"].video == "/mme/601.mp4"  # no videoID: the video_id
    assert [s.id for s in load_video_mme(FIXTURES / "video_mme", split="long")] == ["601-1"]


def test_video_mme_flat_rows_and_known_empty_split():
    samples = load_video_mme(FIXTURES / "video_mme" / "video_mme.jsonl")
    assert [(s.id, s.answer, s.options[0]) for s in samples] == [
        ("001-1", "C", "Apples."),
        ("301-3", "A", "A rabbit."),
    ]
    assert samples[1].video == "xYz12345678.mp4"
    assert list(load_video_mme(FIXTURES / "video_mme" / "video_mme.jsonl", split="long")) == []


# --- EgoSchema ----------------------------------------------------------------------------


def test_egoschema_joins_public_answers():
    samples = by_id(load_egoschema(FIXTURES / "egoschema", "/ego"))
    assert list(samples) == ["ego-0001", "ego-0002", "ego-0003"]
    assert samples["ego-0001"].answer == "A" and samples["ego-0003"].answer == "E"
    unknown = samples["ego-0002"]
    assert unknown.answer is None and not unknown.has_answer and unknown.is_mcq
    assert unknown.options == ("to fetch a knife", "to eat", "to write", "to sit", "to clean it")
    assert unknown.video == "/ego/ego-0002.mp4"
    subset = load_egoschema(FIXTURES / "egoschema" / "questions.json", split="subset")
    assert [s.id for s in subset] == ["ego-0001", "ego-0003"]


def test_egoschema_without_answer_file(tmp_path):
    questions = tmp_path / "questions.json"
    questions.write_bytes((FIXTURES / "egoschema" / "questions.json").read_bytes())
    samples = load_egoschema(questions)
    assert [s.answer for s in samples] == [None, None, None]
    with pytest.raises(DatasetError, match="file not found"):
        load_egoschema(questions, answers=tmp_path / "nope.json")


def test_egoschema_bad_answer_index(tmp_path):
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"ego-0001": 0, "ego-0002": 5}))
    with pytest.raises(DatasetError, match=r"answers\.json, record 1: .*ego-0002"):
        load_egoschema(FIXTURES / "egoschema", answers=answers, strict=True)


# --- NExT-QA / NExT-GQA -------------------------------------------------------------------


def test_nextqa_index_answers_quoted_fields_and_video_map():
    samples = by_id(load_nextqa(FIXTURES / "nextqa", "/vidor"))
    assert list(samples) == ["4010069381_6", "4010069381_7", "7771234567_0"]
    first = samples["4010069381_6"]
    assert first.answer == "A" and first.answer_text == "roll the handle"
    assert first.video == "/vidor/1006/4010069381.mp4"
    assert first.meta["frame_count"] == 369 and first.duration is None
    second = samples["4010069381_7"]
    assert second.question == "what does the man do after playing, the second time"
    assert second.options[2] == "sing, loudly" and second.answer == "E"
    assert samples["7771234567_0"].category == "DC"
    assert [s.id for s in load_nextqa(FIXTURES / "nextqa", categories=["TN", "DC"])] == [
        "4010069381_7",
        "7771234567_0",
    ]


def test_nextgqa_text_answers_and_grounding():
    samples = by_id(load_nextgqa(FIXTURES / "nextgqa"))
    first = samples["2482028659_2"]
    assert first.answer == "B" and first.duration == 21.0
    assert first.gt_intervals == (Interval(1.2, 5.8),)
    # the answer "2" is the option text "2" (a0), not the index 2
    count = samples["2482028659_5"]
    assert count.answer == "A"
    assert count.gt_intervals == (Interval(9.2, 21.0), Interval(3, 4))  # 21.5 clipped to 21
    last = samples["5550001111_1"]
    assert last.gt_intervals[-1] == Interval(30.3, 50.0) and last.meta["fps"] == 30.0


def test_nextgqa_missing_grounding_entry(tmp_path):
    csv_text = (FIXTURES / "nextgqa" / "val.csv").read_text()
    (tmp_path / "val.csv").write_text(csv_text)
    (tmp_path / "gsub_val.json").write_text(json.dumps({"2482028659": {"duration": 21}}))
    with pytest.raises(DatasetError, match=r"record 2: video 5550001111 has no entry"):
        load_nextgqa(tmp_path / "val.csv", strict=True)
    (tmp_path / "gsub_val.json").unlink()
    with pytest.raises(DatasetError, match="no grounding file"):
        load_nextgqa(tmp_path / "val.csv")


def test_nextqa_csv_without_columns(tmp_path):
    path = tmp_path / "val.csv"
    path.write_text("video,question,answer\n1,q,0\n")
    with pytest.raises(DatasetError, match=r"val\.csv: CSV header lacks columns"):
        load_nextqa(path)
