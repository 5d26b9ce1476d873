"""The curves of a ``video-env train rl`` run, as one PNG for the docs.

Reads the run's ``log.jsonl`` (one row per optimiser step, :class:`StepStats`) and plots,
against the step: the reward (of the kept groups, and of every group drawn), accuracy,
the share of format-valid turns, turns per episode, the rewatch rate and the KL to the
reference. The same values are in the run's ``tensorboard/`` folder.

    python -m experiments.videoscout_pixel.rl_curves runs/rl-pixel --out docs/images/rl-pixel.png

Several runs overlay in the same panels, each named by its ``--label`` (default: its
folder's name), to compare runs of one start.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from video_env._optional import require

#: The panels: (title, the log's fields drawn in it).
PANELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("reward", ("mean_reward", "drawn_reward")),
    ("accuracy", ("accuracy",)),
    ("format-valid turns", ("format_valid",)),
    ("turns per episode", ("turns",)),
    ("rewatch rate", ("rewatch_rate",)),
    ("KL to the reference", ("kl",)),
)
_LABELS = {
    "mean_reward": "kept groups (with the overlong penalty)",
    "drawn_reward": "every group drawn (the env's reward)",
}


def read_log(run: str | Path) -> list[dict[str, Any]]:
    """The rows of ``run/log.jsonl`` (``run`` may also be the file itself)."""
    path = Path(run)
    path = path / "log.jsonl" if path.is_dir() else path
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def plot_curves(rows: Sequence[dict[str, Any]], out: str | Path, title: str = "") -> Path:
    """Draw the :data:`PANELS` of one run's ``rows`` into the PNG ``out``."""
    return plot_runs({"": rows}, out, title)


def plot_runs(
    runs: Mapping[str, Sequence[dict[str, Any]]], out: str | Path, title: str = ""
) -> Path:
    """Draw the :data:`PANELS` of several runs (label → rows) into the PNG ``out``."""
    matplotlib = require("matplotlib", "bench", "training curves")
    matplotlib.use("Agg")
    plt = require("matplotlib.pyplot", "bench", "training curves")
    several = len(runs) > 1
    fig, axes = plt.subplots(2, 3, figsize=(11, 6.0 if several else 5.5), sharex=True)
    for ax, (name, fields) in zip(axes.flat, PANELS, strict=True):
        for colour, (run, rows) in enumerate(runs.items()):
            steps = [int(r["step"]) for r in rows]
            for style, field in enumerate(fields):
                ys = [float(r.get(field, float("nan"))) for r in rows]
                # a step that kept no group made no update: its kept-group values are empty
                if field in ("mean_reward", "kl"):
                    ys = [y if r["groups"] else float("nan") for y, r in zip(ys, rows, strict=True)]
                label = _LABELS.get(field, field)
                # several runs: a colour per run, a line style per field, one legend below
                ax.plot(steps, ys, marker="o", markersize=3,
                        color=f"C{colour}" if several else None,
                        linestyle=("-", "--")[style % 2] if several else "-",
                        label=f"{run}: {label}" if run else label)  # fmt: skip
        ax.set_title(name, fontsize=10)
        ax.grid(alpha=0.3)
        if len(fields) > 1 and not several:
            ax.legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("optimiser step")
    fig.suptitle(title or "DAPO", fontsize=11)
    if several:
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8)
        fig.tight_layout(rect=(0, 0.1, 1, 1))
    else:
        fig.tight_layout()
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _run_name(run: str) -> str:
    """A run's default name in the legend: its folder's (the log's folder for a file)."""
    path = Path(run)
    return (path.parent if path.is_file() else path).name


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="`train rl` output folders (or log.jsonl)")
    parser.add_argument("--out", required=True, help="the PNG to write")
    parser.add_argument("--title", default="", help="the figure's title")
    parser.add_argument("--label", action="append", default=[],
                        help="a run's name in the legend, in the runs' order (default: its "
                        "folder's name; none for a single run)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.label and len(args.label) != len(args.runs):
        parser.error(f"{len(args.label)} labels for {len(args.runs)} runs")
    names = args.label or ([""] if len(args.runs) == 1 else [_run_name(r) for r in args.runs])
    if len(set(names)) != len(names):
        parser.error(f"two runs share a name ({', '.join(names)}): give each a --label")
    runs = {}
    for name, run in zip(names, args.runs, strict=True):
        rows = read_log(run)
        if not rows:
            parser.error(f"{run}: no steps logged")
        runs[name] = rows
    print(plot_runs(runs, args.out, args.title))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
