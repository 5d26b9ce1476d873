"""Loaders on real-world quirks: bad records skipped, harmless ones kept, both reported."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from video_env.data import EMPTY_OPTION, SkippedRecordsWarning, load
from video_env.data._common import RecordContext
from video_env.errors import DatasetError

QUIRKS = Path(__file__).parents[1] / "fixtures" / "data" / "quirks"

# no fixture has videos; the missing-video summary is tested in test_data_common.py
pytestmark = pytest.mark.filterwarnings("ignore::video_env.data.MissingVideosWarning")

# dataset, folder, loader options,
#   kept sample ids, {repaired record id: message part}, {skipped record id: message part}
CASES = [
    (
        "cg-bench",
        "cg_bench",
        {},
        ["201-mcq", "203-mcq"],
        {"201": "empty option B"},
        {"202": "every option is empty"},
    ),
    (
        "egoschema",
        "egoschema",
        {},
        ["ego-q1", "ego-q3"],
        {"ego-q1": "empty option C"},
        {"ego-q2": "every option is empty", "ego-q4": "the correct option B is empty"},
    ),
    (
        "falcon-bench",
        "falcon_bench",
        {"form": "mcq"},
        ["fq-101-mcq", "fq-103-mcq"],
        {"fq-101": "empty option B"},
        {"fq-102": "no options"},
    ),
    (
        "jsonl",
        "jsonl/samples.jsonl",
        {},
        ["j-2", "j-1"],
        {"j-2": "empty option B"},
        {"j-3": "every option is empty", None: "invalid JSON"},
    ),
    (
        "lvbench",
        "lvbench",
        {},
        ["3001", "3003"],
        {"3001": "empty option B"},
        {"3002": "every option is empty"},
    ),
    (
        "mlvu",
        "mlvu",
        {},
        ["4_count-0", "4_count-2"],
        {"count_1.mp4": "empty option B"},
        {"count_2.mp4": "every option is empty"},
    ),
    (
        "nextqa",
        "nextqa",
        {},
        ["3000000001_1", "3000000002_3"],
        {"3000000001_1": "empty option D"},
        {"3000000001_2": "every option is empty"},
    ),
    (
        "nextgqa",
        "nextgqa",
        {},
        ["3000000001_1", "3000000002_3"],
        {"3000000001_1": "empty option B"},
        {"3000000001_2": "every option is empty"},
    ),
    (
        "video-mme",
        "video_mme",
        {},
        ["901-1", "901-3"],
        {"901-1": "empty option B"},
        {"901-2": "every option is empty"},
    ),
]


@pytest.mark.parametrize(
    ("dataset", "folder", "options", "kept", "repaired", "skipped"),
    CASES,
    ids=[case[0] for case in CASES],
)
def test_quirky_records_are_kept_or_skipped_and_reported(
    dataset, folder, options, kept, repaired, skipped
):
    with pytest.warns(SkippedRecordsWarning) as caught:
        samples = load(dataset, QUIRKS / folder, **options)
    summaries = [str(w.message) for w in caught if w.category is SkippedRecordsWarning]
    assert len(summaries) == 1 and f"{len(skipped)} malformed records skipped" in summaries[0]
    assert [s.id for s in samples] == kept
    assert {issue.id: issue.message for issue in samples.repaired_records}.keys() == repaired.keys()
    for issue in samples.repaired_records:
        assert repaired[issue.id] in issue.message and issue.index is not None
    assert {issue.id for issue in samples.skipped_records} == set(skipped)
    for issue in samples.skipped_records:
        assert skipped[issue.id] in issue.message and issue.index is not None
        assert issue.source in samples.sources
    # the empty option keeps its letter, so the answer letter keeps its meaning
    flagged = samples[0]
    letter = repaired[next(iter(repaired))].split()[-1]
    assert flagged.options is not None
    assert flagged.options["ABCDE".index(letter)] == EMPTY_OPTION
    assert flagged.answer_text != EMPTY_OPTION


@pytest.mark.parametrize(("dataset", "folder", "options"), [c[:3] for c in CASES])
def test_strict_refuses_the_first_bad_record(dataset, folder, options):
    with pytest.raises(DatasetError, match=r"record \d+: "):
        load(dataset, QUIRKS / folder, strict=True, **options)


def test_real_duplicate_options_are_reported_not_refused(tmp_path):
    # NExT-QA val has rows such as "scarf, cap, turban, spectacles, scarf"
    lines = (QUIRKS / "nextqa" / "val.csv").read_text().splitlines()
    duplicate = "3000000009,300,640,480,what is on his head,1,9,DO,scarf,cap,turban,hat,scarf"
    csv = tmp_path / "val.csv"
    csv.write_text("\n".join([lines[0], lines[3], duplicate]) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        samples = load("nextqa", csv)
    assert [s.id for s in samples] == ["3000000002_3", "3000000009_9"]
    assert [(i.id, i.message) for i in samples.repaired_records] == [
        ("3000000009_9", "options A and E are both 'scarf'")
    ]
    assert samples.skipped_records == ()


def test_the_record_guard_drops_the_flags_and_clips_of_a_skipped_record():
    def parser(ctx):
        def parse(index, record):
            ctx.options(record["options"], index)  # flags an empty option
            ctx.intervals([[0, 10.5]], 10.0, index)  # clips one interval
            return [] if record["ok"] else ctx.field(record, "absent", index)

        return parse

    records = [
        {"id": "a", "options": ["x", ""], "ok": False},
        {"id": "b", "options": ["", "y"], "ok": True},
    ]
    ctx = RecordContext(Path("f.json"), strict=False)
    assert ctx.collect(records, parser(ctx)) == []
    assert [(i.index, i.id) for i in ctx.skipped] == [(0, "a")]
    assert [(i.index, i.id, i.message) for i in ctx.repaired] == [
        (1, "b", f"empty option A kept as {EMPTY_OPTION!r}")
    ]
    assert ctx.clipped == 1
    strict = RecordContext(Path("f.json"))  # strict by default
    with pytest.raises(DatasetError, match="record 0: missing field 'absent'"):
        strict.collect(records, parser(strict))
