"""Issue 63's held-out table: every policy of one or more bench runs on a suite, side by side.

``python -m experiments.pacing_suite.held_out runs/bench-glimpse-... --baseline pacing-2x``
reads the bench folders' planned records (``video-env bench --suite synth-glimpse --envs
pacing --perception pixel-vlm ...``), and writes, per policy (as typed), accuracy, reward,
GToU, frames, turns and rewatches, each the mean with its 95 % interval clustered by video;
per policy the paired difference against ``--baseline`` on the questions both played; and
per learned policy (``--histogram NAME``) a figure of its actions by turn: how often it
sped up, slowed down, rewatched or answered at each turn (``speeds.png``).

Only observations reach the policies; the columns read the records the bench wrote
(``correct``, ``gtou``: the study's privilege, never the policy's).
"""

from __future__ import annotations

import argparse
import json
import re
import textwrap
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.run_folder import planned_records, read_run_json
from experiments.pacing_suite.separation import mean_interval
from experiments.videoscout_pixel.videoscout_pixel import paired_differences

__all__ = ["ACTIONS", "COLUMNS", "action_kind", "main", "paired", "rows_of", "table"]

#: The table's columns: (name, how a record gives it).
COLUMNS = ("accuracy", "reward", "gtou", "frames", "turns", "rewatches")
#: The kinds of a Pacing action, in the histogram's order.
ACTIONS = ("speed(1x)", "speed(2x)", "speed(4x)", "rewatch", "answer", "invalid")
_SPEED = re.compile(r"speed\(\s*([124])\s*x?\s*\)", re.IGNORECASE)


def action_kind(action: str) -> str:
    """The :data:`ACTIONS` kind of one recorded Pacing action text."""
    text = str(action).strip().lower()
    match = _SPEED.search(text)
    if match:
        return f"speed({match.group(1)}x)"
    for kind in ("rewatch", "answer"):
        if text.startswith(kind):
            return kind
    return "invalid"


def _actions(record: Mapping[str, Any]) -> list[str]:
    return [action_kind(step.get("action", "")) for step in record.get("trajectory") or []]


def rows_of(folder: str | Path, forms: Sequence[str] = ("mcq", "open")) -> list[dict[str, Any]]:
    """One row per planned episode of a bench folder: the columns, its policy and video."""
    path = Path(folder)
    rows = []
    for record in planned_records(path, read_run_json(path)):
        form = str(record["sample_id"]).rsplit("/", 1)[-1]
        if form not in forms:
            continue
        actions = _actions(record)
        rows.append(
            {
                "policy": str(record["job"]).split("|")[1],  # as typed
                "sample_id": record["sample_id"],
                "video": record["video_id"],
                "accuracy": float(bool(record.get("correct"))),
                "reward": float(record.get("reward") or 0.0),
                "gtou": float(record.get("gtou") or 0.0),
                "frames": float(record.get("frames") or 0),
                "turns": float(record.get("turns") or 0),
                "rewatches": float(actions.count("rewatch")),
                "actions": actions,
                "error": record.get("error"),
            }
        )
    return rows


def table(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per policy: episodes, videos, failures and each column's mean with its interval."""
    out: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(r["policy"] for r in rows):
        mine = [r for r in rows if r["policy"] == name]
        videos = [r["video"] for r in mine]
        cells: dict[str, Any] = {
            "episodes": len(mine),
            "videos": len(set(videos)),
            "failures": sum(r["error"] is not None for r in mine),
        }
        for column in COLUMNS:
            cells[column] = mean_interval([r[column] for r in mine], videos)
        out[name] = cells
    return out


def paired(rows: Sequence[dict[str, Any]], baseline: str, other: str) -> dict[str, list[float]]:
    """``other`` − ``baseline`` per column over the questions both played (clustered CI).

    Raises:
        ValueError: If the two share no question.
    """
    as_models = [{**r, "model": r["policy"]} for r in rows]  # the study's row key
    pairs = paired_differences(as_models, baseline, other)
    return {column: pairs[column] for column in ("accuracy", "reward", "frames")}


def by_turn(rows: Sequence[dict[str, Any]], policy: str) -> list[Counter[str]]:
    """The kinds of ``policy``'s actions at each turn (index 0: its first action)."""
    turns: list[Counter[str]] = []
    for row in rows:
        if row["policy"] != policy:
            continue
        for k, kind in enumerate(row["actions"]):
            if k == len(turns):
                turns.append(Counter())
            turns[k][kind] += 1
    return turns


def plot_histogram(rows: Sequence[dict[str, Any]], policies: Sequence[str], out: Path) -> None:
    """Stacked bars, one panel per policy: its actions at each turn."""
    from benchmarks.figures import figure, save
    from benchmarks.plot_style import PAGE_WIDTH, PlotOptions

    colours = ("#1b9e77", "#7570b3", "#d95f02", "#e7298a", "#666666", "#bbbbbb")
    size = (PAGE_WIDTH, 2.9)
    with figure(1, len(policies), figsize=size, squeeze=False, layout="constrained") as (fig, axes):
        shown: dict[str, Any] = {}
        for ax, policy in zip(axes[0], policies, strict=True):
            turns = by_turn(rows, policy)
            x = np.arange(1, len(turns) + 1)
            bottom = np.zeros(len(turns))
            for kind, colour in zip(ACTIONS, colours, strict=True):
                heights = np.array([t[kind] for t in turns], dtype=float)
                if heights.any():
                    shown[kind] = ax.bar(x, heights, bottom=bottom, color=colour)
                    bottom += heights
            ax.set_title(textwrap.fill(policy, 28))
            ax.set_xlabel("turn")
            ax.set_xticks(x)
        axes[0][0].set_ylabel("episodes")
        fig.get_layout_engine().set(rect=(0, 0.06, 1, 0.94))  # room for the note below
        order = [k for k in ACTIONS if k in shown]
        fig.legend([shown[k] for k in order], order, loc="outside right center")
        note = "PIXEL-VLM perception: the tiny pixel VLM on synthetic frames"
        save(fig, out, PlotOptions(), simulated=False, note=note)


def format_table(cells: Mapping[str, dict[str, Any]]) -> list[str]:
    """Markdown lines of :func:`table`'s result."""
    lines = [
        "| policy | questions (videos) | " + " | ".join(COLUMNS) + " |",
        "|---|---|" + "---|" * len(COLUMNS),
    ]
    for name, c in cells.items():
        values = " | ".join(f"{c[k][0]:.2f} ({c[k][1]:.2f}–{c[k][2]:.2f})" for k in COLUMNS)
        fails = f", {c['failures']} failed" if c["failures"] else ""
        lines.append(f"| {name} | {c['episodes']} ({c['videos']}{fails}) | {values} |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="bench results folders")
    parser.add_argument("--forms", nargs="+", default=["mcq", "open"], choices=["mcq", "open"])
    parser.add_argument("--baseline", help="the policy every other is paired against")
    parser.add_argument("--histogram", nargs="*", default=[], help="policies to draw by turn")
    parser.add_argument("--out", default="runs/pacing-suite/held-out")
    args = parser.parse_args(argv)
    rows = [row for folder in args.runs for row in rows_of(folder, args.forms)]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cells = table(rows)
    report: dict[str, Any] = {"runs": args.runs, "forms": args.forms, "table": cells}
    lines = format_table(cells)
    if args.baseline:
        report["paired"] = {
            name: paired(rows, args.baseline, name) for name in cells if name != args.baseline
        }
        lines += ["", f"Paired against {args.baseline} (other − baseline, clustered 95 % CI):"]
        for name, diff in report["paired"].items():
            parts = ", ".join(
                f"{k} {v[0]:+.2f} ({v[1]:+.2f} to {v[2]:+.2f})" for k, v in diff.items()
            )
            lines.append(f"- {name}: {parts}")
    if args.histogram:
        report["by_turn"] = {p: [dict(t) for t in by_turn(rows, p)] for p in args.histogram}
        plot_histogram(rows, args.histogram, out / "speeds.png")
        lines.append(f"\nActions by turn: {out / 'speeds.png'}")
    (out / "summary.json").write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
