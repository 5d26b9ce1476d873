"""``python -m benchmarks.tools_table``: today's agents and the seeds' on one cost axis.

Runs ``video-env bench`` over the Tools env's agents (``videoseek``, ``dvd``, each trained
system's preset under the uniform baseline) and the seed envs' (FALCONEye, VideoAgent,
VideoScout's fixed 2x schedule) on one suite and one perception, then writes the table of
``docs/tools.md`` for that suite between ``<!-- refresh-docs:tools-SUITE -->`` markers: accuracy,
GToU, the temporal IoU of the spans viewed, calls, frames and visual tokens delivered to
the policy, the frames the sub-models saw, model tokens, and the caption index's tokens
(counted once per video, apart). The command that made a table is written above it.

Example::

    python -m benchmarks.tools_table --suite synth-hour --limit 40 --update-docs
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.refresh_docs import ROOT, Row, read_csv, replace_region

#: The agents compared: the seeds' (on their own envs) and today's (on the Tools env).
#: The frame-returning presets (LongVT's, VideoZoomer's...) are played by a VLM in the
#: system's dialect (``longvt-vlm:SPEC``...), which needs a model: add it with ``--policies``.
COMPARED = ("falconeye", "videoagent", "pacing-2x", "videoseek", "dvd", "tools-uniform:videoseek",
            "tools-uniform:dvd", "tools-uniform:longvidsearch")  # fmt: skip
ENVS = ("tools", "zoom", "clip_query", "pacing")
DOC = ROOT / "docs" / "tools.md"


def _num(row: Row, key: str) -> float:
    try:
        return float(row[key]) if row.get(key) else math.nan
    except ValueError:
        return math.nan


def _shown(value: float, digits: int = 0) -> str:
    if math.isnan(value):
        return "–"
    if digits == 0 and value >= 1e6:
        return f"{value / 1e6:.1f} M"
    if digits == 0 and value >= 1e4:
        return f"{value / 1e3:.0f} k"
    return f"{value:.{digits}f}"


def table(rows: Sequence[Row]) -> str:
    """The Markdown table of a run's ``summary.csv`` rows, best accuracy first."""
    lines = [
        "| env (preset) | policy | accuracy (95 % CI) | GToU | span IoU | calls | frames shown "
        "| visual tokens shown | sub-model frames | model tokens | index tokens |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def rank(r: Row) -> tuple[bool, float, str]:  # a row whose episodes all failed: last
        accuracy = _num(r, "accuracy")
        return (math.isnan(accuracy), -accuracy if not math.isnan(accuracy) else 0.0, r["policy"])

    for r in sorted(rows, key=rank):
        env = r["env"] + (f" ({r['rules']})" if r.get("rules") and r["env"] == "tools" else "")
        calls = _num(r, "mean_tool_calls")
        calls = _num(r, "mean_turns") if math.isnan(calls) else calls
        acc = (
            f"{_num(r, 'accuracy'):.2f} ({_num(r, 'acc_ci_low'):.2f}–{_num(r, 'acc_ci_high'):.2f})"
            if not math.isnan(_num(r, "accuracy"))
            else "–"
        )
        lines.append(
            f"| {env} | {r['policy']} | {acc} | {_shown(_num(r, 'mean_gtou'), 2)} | "
            f"{_shown(_num(r, 'mean_tool_iou'), 2)} | {_shown(calls, 1)} | "
            f"{_shown(_num(r, 'mean_frames_shown'))} | "
            f"{_shown(_num(r, 'mean_visual_tokens_shown'))} | {_shown(_num(r, 'mean_frames'))} | "
            f"{_shown(_num(r, 'mean_model_tokens'))} | {_shown(_num(r, 'index_model_tokens'))} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] = ()) -> int:
    """Run the comparison; print its table, and write it into ``docs/tools.md`` if asked."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tools_table")
    parser.add_argument("--suite", default="synth-hour")
    parser.add_argument("--perception", default="simulated")
    parser.add_argument("--limit", type=int, default=None, help="questions of the suite")
    parser.add_argument("--out", type=Path, default=None, help="default: runs/tools-SUITE")
    parser.add_argument("--update-docs", action="store_true", help="rewrite docs/tools.md")
    parser.add_argument("--policies", nargs="+", default=list(COMPARED))
    args = parser.parse_args(list(argv))
    from video_env.cli import main as cli

    out = args.out or ROOT / "runs" / f"tools-{args.suite}"
    bench = ["bench", "--suite", args.suite, "--perception", args.perception, "--envs", *ENVS,
             "--policies", *args.policies, "--fresh", "--quiet", "--out", str(out)]  # fmt: skip
    if args.limit is not None:  # bench refuses a limit below 1
        bench += ["--limit", str(args.limit)]
    code = cli(bench)
    if code:
        return code
    rows = read_csv((out / "summary.csv").read_text(encoding="utf-8"))
    command = " ".join(["python -m benchmarks.tools_table", *argv])
    perception = rows[0]["perception"] if rows else args.perception
    content = f"`{command}` (perception: {perception})\n\n{table(rows)}"
    print(content)
    if args.update_docs:
        doc = DOC.read_text(encoding="utf-8")
        DOC.write_text(replace_region(doc, f"tools-{args.suite}", content), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
