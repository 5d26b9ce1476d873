"""The Tools env's cost axis in summaries, and the comparison table of docs/tools.md."""

from __future__ import annotations

import math
from typing import Any

from benchmarks.refresh_docs import read_csv
from benchmarks.summary import COLUMNS, summarize, to_csv
from benchmarks.tools_table import table


def record(video: str, calls: int, index_tokens: int | None, **extra: Any) -> dict[str, Any]:
    index = None if index_tokens is None else {"clips": 3, "visual_tokens": index_tokens}
    return {"job": f"tools|dvd|{video}|0", "env": "tools", "policy": "dvd", "correct": True,
            "video_id": video, "tool_calls": {"clip_search_tool": calls}, "frames_shown": 2,
            "visual_tokens_shown": 100, "tool_iou": 0.5, "index": index, "tools_preset": "dvd",
            **extra}  # fmt: skip


def test_a_videos_index_counts_once_and_other_envs_show_no_tool_costs() -> None:
    rows = summarize(
        [
            record("v1", 2, 1000),
            record("v1", 4, 1000),
            record("v2", 3, 500),
            {
                "job": "zoom|falconeye|v1|0",
                "env": "zoom",
                "policy": "falconeye",
                "correct": False,
                "video_id": "v1",
                "turns": 4,
            },
        ]
    )
    tools, zoom = (next(r for r in rows if r["env"] == env) for env in ("tools", "zoom"))
    assert tools["rules"] == "dvd" and tools["mean_tool_calls"] == 3.0
    assert tools["index_model_tokens"] == 1500.0  # v1's index once, v2's once
    assert tools["mean_tool_iou"] == 0.5 and tools["mean_visual_tokens_shown"] == 100.0
    assert math.isnan(zoom["mean_tool_calls"]) and math.isnan(zoom["index_model_tokens"])


def test_the_comparison_table_names_the_preset_and_falls_back_to_turns() -> None:
    rows = read_csv(
        to_csv(
            summarize(
                [
                    record("v1", 2, 1000),
                    {
                        "job": "zoom|falconeye|v1|0",
                        "env": "zoom",
                        "policy": "falconeye",
                        "correct": False,
                        "video_id": "v1",
                        "turns": 4,
                    },
                ]
            ),
            COLUMNS,
        )
    )
    lines = table(rows).splitlines()
    assert lines[2].startswith("| tools (dvd) | dvd | 1.00")  # best accuracy first
    assert "| 2.0 |" in lines[2] and "| 1000 |" in lines[2]
    assert lines[3].startswith("| zoom | falconeye | 0.00") and "| 4.0 |" in lines[3]


def test_a_lost_tools_job_is_counted_in_its_agents_row() -> None:
    from benchmarks.jobs import Job, lost_job_record

    records = [
        record(f"v{i}", 2, None, job=f"tools|videoseek|s{i}|0", policy="videoseek[offline]")
        for i in range(3)
    ]
    records.append(lost_job_record(Job("tools", "videoseek", 3, "s3", 0), "the worker died"))
    (row,) = summarize(records)
    assert row["policy"] == "videoseek[offline]" and row["rules"] == "dvd"
    assert row["episodes"] == 4 and row["failures"] == 1 and row["accuracy"] == 0.75


def test_a_row_whose_episodes_all_failed_is_ranked_last_and_shown_as_a_dash() -> None:
    rows = [
        {"env": "tools", "policy": "dvd", "accuracy": "", "rules": "dvd"},
        {"env": "tools", "policy": "b", "accuracy": "0.5", "acc_ci_low": "0.1",
         "acc_ci_high": "0.9", "rules": "dvd"},
    ]  # fmt: skip
    lines = table(rows).splitlines()[2:]
    assert lines[0].startswith("| tools (dvd) | b | 0.50")
    assert lines[1].startswith("| tools (dvd) | dvd | – |")


def test_a_limit_of_0_reaches_the_bench_which_refuses_it(monkeypatch: Any) -> None:
    import video_env.cli
    from benchmarks import tools_table

    given: list[list[str]] = []

    def bench(argv: list[str]) -> int:
        given.append(list(argv))
        return 2

    monkeypatch.setattr(video_env.cli, "main", bench)
    assert tools_table.main(["--suite", "synth-tiny", "--limit", "0"]) == 2
    assert given[0][given[0].index("--limit") + 1] == "0"
