"""A damaged results folder: no record is ever lost, every error is one line."""

import json
from pathlib import Path

import pytest
from shared_fixtures import bench_run_fixtures

from benchmarks.records import EpisodeLog, EpisodeLogWarning
from video_env.cli import main

ARGS = ["bench", "--suite", "synth-tiny", "--envs", "pacing", "--policies", "pacing-4x",
        "--quiet", "--no-plots", "--executor", "serial"]  # fmt: skip


finished, run = bench_run_fixtures(ARGS)


def lines(folder: Path) -> list[bytes]:
    return (folder / "episodes.jsonl").read_bytes().split(b"\n")


def rewrite(folder: Path, parts: list[bytes]) -> bytes:
    data = b"\n".join(parts)
    (folder / "episodes.jsonl").write_bytes(data)
    return data


def test_report_never_shortens_the_log(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parts = lines(run)
    assert len(parts) == 13 and parts[-1] == b""  # 12 records
    damaged = [*parts[:6], b"", *parts[6:9], b"{oops", b"{}", b"null", b"\xff\xfe", *parts[9:]]
    data = rewrite(run, damaged)
    assert main(["bench", "report", str(run), "--no-plots"]) == 0
    assert (run / "episodes.jsonl").read_bytes() == data  # not one byte removed
    err = capsys.readouterr().err
    for number in (11, 12, 13, 14):  # the bad lines, by their line numbers
        assert f"line {number}:" in err
    assert "line 7:" not in err  # a blank line holds nothing to warn about
    assert "| 12 |" in (run / "summary.md").read_text()
    # a resumed run finds all 12 episodes done and still keeps every line
    assert main([*ARGS, "--out", str(run)]) == 0
    assert "Nothing computed: all 12 episodes were reused" in capsys.readouterr().out
    assert (run / "episodes.jsonl").read_bytes() == data


def test_hand_edited_fields_do_not_break_the_report(run: Path) -> None:
    parts = lines(run)
    record = json.loads(parts[0])
    record.update(gtou="n/a", turns=None, prompt_tokens="lots", wall_s=[1])
    rewrite(run, [json.dumps(record).encode(), *parts[1:]])
    assert main(["bench", "report", str(run), "--no-plots"]) == 0


def test_only_a_partial_last_line_is_repaired_and_only_by_a_run(run: Path) -> None:
    data = (run / "episodes.jsonl").read_bytes()
    (run / "episodes.jsonl").write_bytes(data + b'{"job": "pacing|pacing-4x|half-wri')
    with pytest.warns(EpisodeLogWarning, match="line 13: incomplete last record skipped"):
        assert len(EpisodeLog(run).load()) == 12
    assert (run / "episodes.jsonl").read_bytes().endswith(b"half-wri")  # a reader repairs nothing
    with pytest.warns(EpisodeLogWarning, match="line 13: an incomplete last record"):
        assert len(EpisodeLog(run).load(repair=True)) == 12
    assert (run / "episodes.jsonl").read_bytes() == data


def test_a_complete_last_record_without_newline_is_kept(run: Path) -> None:
    data = (run / "episodes.jsonl").read_bytes()
    (run / "episodes.jsonl").write_bytes(data[:-1])
    assert len(EpisodeLog(run).load(repair=True)) == 12
    assert (run / "episodes.jsonl").read_bytes() == data


@pytest.mark.parametrize("content", [b"", b'{"config": {"suite"', b"null", b"[]", b"\xff{}"])
def test_a_damaged_run_json_is_a_one_line_error(
    run: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    (run / "run.json").write_bytes(content)
    assert main([*ARGS, "--out", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run.json is damaged" in err


def test_report_of_a_log_without_records_is_a_one_line_error(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rewrite(run, [b"{}", b"null", json.dumps({"job": 1}).encode(), b""])
    assert main(["bench", "report", str(run), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "holds no episode records" in err
    assert "Traceback" not in err
