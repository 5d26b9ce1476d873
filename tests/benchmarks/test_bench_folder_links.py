"""A results folder whose files are links: no run writes through one, each is a one-line error."""

import os
from pathlib import Path

import pytest
from shared_fixtures import bench_run_fixtures

from benchmarks.records import EpisodeLog
from benchmarks.run_files import write_atomic
from video_env.cli import main
from video_env.errors import ConfigError

ARGS = ["bench", "--suite", "synth-tiny", "--envs", "pacing", "--policies", "pacing-4x",
        "--quiet", "--no-plots", "--executor", "serial"]  # fmt: skip
VICTIM = b"precious line 1\nprecious line 2 without its newline"

finished, run = bench_run_fixtures(ARGS)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_bytes(VICTIM)
    return path


def refused(capsys: pytest.CaptureFixture[str], name: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert name in err and "not a regular file" in err, err
    return err


def test_a_lock_link_leaves_its_target_whole(
    tmp_path: Path, victim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x"
    out.mkdir()
    (out / ".lock").symlink_to(victim)
    assert main([*ARGS, "--out", str(out)]) == 2
    assert "symbolic link" in refused(capsys, ".lock")
    assert victim.read_bytes() == VICTIM
    assert not (out / "episodes.jsonl").exists()  # refused before anything was written


def test_a_log_link_is_neither_repaired_nor_appended_to(
    run: Path, victim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (run / "episodes.jsonl").unlink()
    (run / "episodes.jsonl").symlink_to(victim)  # run.json of the same command beside it
    assert main([*ARGS, "--out", str(run)]) == 2
    refused(capsys, "episodes.jsonl")
    assert main(["bench", "report", str(run), "--no-plots"]) == 2
    refused(capsys, "episodes.jsonl")
    assert victim.read_bytes() == VICTIM


@pytest.mark.parametrize("name", ["run.json", "summary.csv", ".summary.md.tmp"])
def test_other_run_files_are_not_written_through_links(
    run: Path, victim: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (run / name).unlink(missing_ok=True)
    (run / name).symlink_to(victim)
    code = main(["bench", "report", str(run), "--no-plots"])
    if name.endswith(".tmp"):  # a temporary file is made anew: the link is removed, not used
        assert code == 0 and not (run / name).exists()
    else:
        assert code == 2
        refused(capsys, name)
    assert victim.read_bytes() == VICTIM


def test_a_plot_link_is_refused(
    run: Path, victim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (run / "frontier.png").symlink_to(victim)
    assert main(["bench", "report", str(run)]) == 2
    refused(capsys, "frontier.png")
    assert victim.read_bytes() == VICTIM


def test_a_fifo_or_a_directory_is_refused_at_once(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (run / "episodes.jsonl").unlink()
    os.mkfifo(run / "episodes.jsonl")  # opening it to read would wait for a writer
    assert main(["bench", "report", str(run), "--no-plots"]) == 2
    assert "a FIFO" in refused(capsys, "episodes.jsonl")
    (run / "episodes.jsonl").unlink()
    (run / "episodes.jsonl").mkdir()
    assert main([*ARGS, "--out", str(run)]) == 2
    assert "a folder" in refused(capsys, "episodes.jsonl")


def test_a_log_with_another_hard_link_is_not_changed_in_place(run: Path, tmp_path: Path) -> None:
    other = tmp_path / "backup.jsonl"
    os.link(run / "episodes.jsonl", other)
    before = other.read_bytes()
    with pytest.raises(ConfigError, match="2 hard links"):
        EpisodeLog(run).append({"job": "a|b|c|0", "env": "a", "policy": "b"})
    assert other.read_bytes() == before
    assert len(EpisodeLog(run).load()) == 12  # reading it is harmless


def test_an_atomic_write_replaces_a_regular_file(tmp_path: Path) -> None:
    target = tmp_path / "table.csv"
    target.write_text("old")
    write_atomic(target, "new")
    write_atomic(target, b"bytes")
    assert target.read_bytes() == b"bytes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]
