"""``bench compare``'s layout: paired rows in the table, unpaired settings a line per run."""

from pathlib import Path

import pytest

from benchmarks.records import EpisodeLog
from video_env.cli import main


def write_run(folder: Path, correct: list[bool], settings: list[tuple[str, str]]) -> None:
    """Records of each (env, policy) in ``settings`` on questions ``q0``, ``q1``…"""
    folder.mkdir()
    log = EpisodeLog(folder)
    for env, policy in settings:
        for i, ok in enumerate(correct):
            log.append({"job": f"{env}|{policy}|q{i}|0", "env": env, "policy": policy,
                        "sample_id": f"q{i}", "seed": 0, "video_id": f"v{i}", "correct": ok,
                        "vlm_calls": 2, "frames": 10, "visual_tokens": 100})  # fmt: skip


def compare_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["bench", "compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    return capsys.readouterr().out.rstrip("\n").splitlines()


def test_paired_rows_come_first_and_unpaired_policies_take_a_line_per_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    only_a = [("zoom", f"a{i:02d}") for i in range(13)]
    write_run(tmp_path / "a", [True, False], [*only_a, ("pacing", "p")])
    write_run(tmp_path / "b", [True, True], [("pacing", "p"), ("clip_query", "b0")])
    lines = compare_lines(tmp_path, capsys)
    table = [line for line in lines if line.startswith("|")]
    assert [line.count("|") for line in table] == [9, 9, 9], table  # 8 cells in every row
    assert table[2].startswith("| pacing | p | 2 | +0.500 (")
    names = ", ".join(f"a{i:02d} (zoom)" for i in range(13))
    assert lines[-2:] == [f"only in A (13): {names}", "only in B (1): b0 (clip_query)"]


def test_runs_without_a_shared_policy_say_so_in_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(tmp_path / "a", [True], [("zoom", "p")])
    write_run(tmp_path / "b", [True], [("zoom", "q")])
    lines = compare_lines(tmp_path, capsys)
    table = [line for line in lines if line.startswith("|")]
    assert [line.count("|") for line in table] == [9, 9, 9], table
    assert "no (env, policy) is in both runs" in table[2]
    assert lines[-2:] == ["only in A (1): p (zoom)", "only in B (1): q (zoom)"]
