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
