"""Only this run's records count: other jobs' lines and non-finite numbers are listed."""

import csv
import json
from pathlib import Path

import pytest
from shared_fixtures import bench_run_fixtures

from benchmarks.records import EpisodeLog
from video_env.cli import main

ARGS = ["bench", "--suite", "synth-tiny", "--envs", "zoom", "--policies", "uniform", "--limit",
        "4", "--quiet", "--no-plots", "--executor", "serial"]  # fmt: skip


finished, run = bench_run_fixtures(ARGS)


def records(folder: Path) -> list[bytes]:
    return (folder / "episodes.jsonl").read_bytes().splitlines()


def write(folder: Path, lines: list[bytes]) -> None:
    (folder / "episodes.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))


def summary_row(folder: Path) -> dict[str, str]:
    with (folder / "summary.csv").open() as handle:
        (row,) = csv.DictReader(handle)
    return row


def foreign(line: bytes, sample: str) -> bytes:
    """A record of the same env and policy, but of a job this run never planned."""
    record = json.loads(line)
    record.update(job=f"zoom|uniform|{sample}|0", sample_id=sample, gtou=0.99)
    return json.dumps(record).encode()


def test_records_of_other_jobs_are_listed_not_counted(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = records(run)
    assert len(lines) == 4
    gtou = summary_row(run)["mean_gtou"]
    write(run, [*lines, *(foreign(lines[0], f"elsewhere-{i}") for i in range(3))])
    capsys.readouterr()
    assert main(["bench", "report", str(run), "--no-plots"]) == 0
    row = summary_row(run)
    assert row["episodes"] == "4" and row["mean_gtou"] == gtou  # not 7, not pulled up
    err = capsys.readouterr().err
    assert "lines 5, 6, 7: a record of a job that is not in this run's plan" in err
    assert err.count("\n") == 1  # one warning for the three lines
    # resuming counts the 4 planned episodes only, and keeps every line
    assert main([*ARGS, "--out", str(run)]) == 0
    assert "Nothing computed: all 4 episodes were reused" in capsys.readouterr().out
    assert len(records(run)) == 7


@pytest.mark.parametrize("number", [b"NaN", b"-Infinity", b"Infinity", b"1e999", b"-1e400"])
def test_a_record_with_a_number_that_is_not_finite_is_listed_and_rerun(
    run: Path, number: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = records(run)
    damaged = json.loads(lines[1])
    text = json.dumps({**damaged, "gtou": "PLACEHOLDER"}).encode()
    write(run, [lines[0], text.replace(b'"PLACEHOLDER"', number), *lines[2:]])
    capsys.readouterr()
    assert main(["bench", "report", str(run), "--no-plots"]) == 0
    row = summary_row(run)
    assert row["episodes"] == "3" and float(row["mean_gtou"]) >= 0
    assert "line 2: a number that is not finite" in capsys.readouterr().err
    # the job has no sound record: a resumed run reruns it, and the line stays
    assert main([*ARGS, "--out", str(run)]) == 0
    assert "1 episodes run, 3 reused" in capsys.readouterr().out
    assert summary_row(run)["episodes"] == "4"
    assert number in (run / "episodes.jsonl").read_bytes()


def test_a_foreign_last_line_without_newline_is_kept_whole_by_a_resume(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = records(run)
    write(run, lines[1:])
    with (run / "episodes.jsonl").open("ab") as handle:
        handle.write(foreign(lines[0], "elsewhere"))  # complete, but no newline
    assert main([*ARGS, "--out", str(run)]) == 0
    assert "1 episodes run, 3 reused" in capsys.readouterr().out
    after = records(run)
    assert after[:4] == [*lines[1:], foreign(lines[0], "elsewhere")]
    assert [json.loads(line)["job"] for line in after[4:]] == [json.loads(lines[0])["job"]]


def test_a_run_writes_null_for_a_number_that_is_not_finite(tmp_path: Path) -> None:
    import numpy as np

    log = EpisodeLog(tmp_path)
    record = {"job": "j", "env": "zoom", "policy": "p", "gtou": float("nan"),
              "reward_parts": {"cost": float("-inf")},
              "readings": np.array([1.0, np.inf])}  # fmt: skip
    log.append(record)
    assert b"NaN" not in log.path.read_bytes() and b"Infinity" not in log.path.read_bytes()
    (loaded,) = log.load()
    assert loaded["gtou"] is None and loaded["reward_parts"]["cost"] is None
    assert loaded["readings"] == [1.0, None]


def test_compare_counts_only_planned_records(run: Path, finished: Path) -> None:
    from benchmarks.compare import paired_rows

    lines = records(run)
    write(run, [*lines, foreign(lines[0], "elsewhere")])
    with pytest.warns(UserWarning, match="line 5: a record of a job"):
        (row,) = paired_rows(finished, run)
    assert row["paired"] == 4 and row["unpaired"] == 0


DAMAGED = [b"", b'{"config": {"suite"', b"null", b"[]", b"\xff{}", b'{"config": 5}',
           b'{"plan": {"pairs": 3}}', b'{"provenance": "x", "fingerprint": 1}']  # fmt: skip


@pytest.mark.parametrize("content", DAMAGED)
@pytest.mark.parametrize("action", ["report", "compare"])
def test_a_damaged_run_json_is_a_one_line_error_in_report_and_compare(
    run: Path, finished: Path, content: bytes, action: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (run / "run.json").write_bytes(content)
    folders = [str(run), "--no-plots"] if action == "report" else [str(finished), str(run)]
    capsys.readouterr()
    assert main(["bench", action, *folders]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is damaged" in err and "Traceback" not in err
    assert "restore it from a backup" in err


@pytest.mark.parametrize(
    "change", [["--seeds", "5"], ["--policies", "random"]], ids=["seeds", "policies"]
)
def test_a_run_sharing_no_job_with_the_folder_is_refused_not_appended(
    run: Path, change: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = (run / "episodes.jsonl").read_bytes(), (run / "run.json").read_bytes()
    capsys.readouterr()
    assert main([*ARGS, *change, "--out", str(run)]) == 2
    err = capsys.readouterr().err
    assert "different set-up" in err and "--fresh" in err
    assert "fix or delete it" not in err  # the refusal, not a warning about every old line
    assert ((run / "episodes.jsonl").read_bytes(), (run / "run.json").read_bytes()) == before


def test_a_lone_surrogate_in_a_record_is_written_as_its_escape_and_reads_back(
    tmp_path: Path,
) -> None:
    log = EpisodeLog(tmp_path)
    reply = "an LLM's reply with a lone surrogate \ud800"  # JSON's "\ud800": no UTF-8 bytes
    log.append({"job": "zoom|p|q|0", "env": "zoom", "policy": "p", "answer": reply})
    (tmp_path / "episodes.jsonl").read_bytes().decode("utf-8")  # the file stays UTF-8
    assert [r["answer"] for r in log.load()] == [reply]
