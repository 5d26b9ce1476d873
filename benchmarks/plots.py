"""Plots of a run (PNG, matplotlib).

The cost-accuracy frontier, accuracy and GToU per category, exploration timelines, and
the reliability of the VLM confidences seen.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from video_env._optional import require
from video_env.metrics.calibration import reliability_bins

SIM_NOTE = "perception: SIMULATED (synthetic world, not a model's result)"


def _pyplot() -> Any:
    matplotlib = require("matplotlib", "bench", "benchmark plots")
    matplotlib.use("Agg")
    return require("matplotlib.pyplot", "bench", "benchmark plots")


def _note(fig: Any, simulated: bool) -> None:
    if simulated:
        fig.text(0.01, 0.005, SIM_NOTE, fontsize=7, color="#a33")


def plot_all(
    folder: Path,
    records: Sequence[dict[str, Any]],
    rows: Sequence[dict[str, Any]],
    categories: Sequence[dict[str, Any]],
) -> list[str]:
    """Write every plot into ``folder``; return the file names."""
    simulated = any(r.get("simulated") for r in records)
    written = [
        frontier(folder / "frontier.png", rows, simulated),
        per_category(folder / "categories.png", categories, simulated),
        timeline(folder / "timeline.png", records, simulated),
        reliability(folder / "reliability.png", records, simulated),
    ]
    return [p for p in written if p]


def frontier(path: Path, rows: Sequence[dict[str, Any]], simulated: bool) -> str:
    """Accuracy against mean VLM calls per episode, one point per (env, policy)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.5, 5.2))
    markers = {"pacing": "o", "zoom": "s", "clip_query": "^"}
    colours = plt.get_cmap("tab20").colors
    labels: dict[tuple[float, float], list[str]] = defaultdict(list)
    for k, row in enumerate(rows):
        x, y = row["mean_vlm_calls"], row["accuracy"]
        ax.errorbar(
            x, y, yerr=[[max(0.0, y - row["acc_ci_low"])], [max(0.0, row["acc_ci_high"] - y)]],
            marker=markers.get(row["env"], "o"), capsize=3, linestyle="none",
            color=colours[k % len(colours)],
        )  # fmt: skip
        labels[(round(x, 2), round(y, 3))].append(f"{row['policy']} ({row['env']})")
    for k, ((x, y), names) in enumerate(sorted(labels.items())):
        ax.annotate(" / ".join(names), (x, y), fontsize=7,
                    xytext=(5, 4 - 10 * (k % 2)), textcoords="offset points")  # fmt: skip
    ax.set_xscale("symlog", linthresh=1)
    ticker = require("matplotlib.ticker", "bench", "benchmark plots")
    # 1-2-5 ticks with plain numbers: a range such as 13-48 calls has no power of ten inside
    ax.xaxis.set_major_locator(ticker.SymmetricalLogLocator(base=10, linthresh=1, subs=(1, 2, 5)))
    ax.xaxis.set_major_formatter(ticker.ScalarFormatter())
    ax.set_xlabel("mean VLM calls per episode")
    ax.set_ylabel("accuracy (95 % CI, bootstrap over videos)")
    ax.set_title("Cost-accuracy frontier")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    _note(fig, simulated)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name


def per_category(path: Path, categories: Sequence[dict[str, Any]], simulated: bool) -> str:
    """Accuracy and GToU per question category, one bar per (env, policy)."""
    plt = _pyplot()
    names = sorted({c["category"] for c in categories})
    runs = sorted({(c["env"], c["policy"]) for c in categories})
    table = {(c["env"], c["policy"], c["category"]): c for c in categories}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    width = 0.8 / max(1, len(runs))
    colours = plt.get_cmap("tab20").colors
    hatches = {"pacing": "", "zoom": "//", "clip_query": ".."}
    for metric, ax in zip(("accuracy", "mean_gtou"), axes, strict=True):
        for k, run in enumerate(runs):
            values = [table.get((*run, n), {}).get(metric, np.nan) for n in names]
            ax.bar(np.arange(len(names)) + k * width, values, width, label=f"{run[1]} ({run[0]})",
                   color=colours[k % len(colours)], hatch=hatches.get(run[0], ""))  # fmt: skip
        ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names)
        ax.set_title("accuracy" if metric == "accuracy" else "mean GToU")
        ax.set_ylim(0, 1.05)
    axes[1].legend(fontsize=6, ncol=1, loc="upper left", bbox_to_anchor=(1.01, 1))
    _note(fig, simulated)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name


def timeline(
    path: Path, records: Sequence[dict[str, Any]], simulated: bool, max_rows: int = 16
) -> str:
    """What each policy looked at, on one sample, against the ground truth (green)."""
    plt = _pyplot()
    by_sample: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("explored") is not None:
            by_sample[str(r.get("sample_id"))].append(r)
    if not by_sample:
        return ""
    sample_id = max(by_sample, key=lambda s: (len(by_sample[s]), s))
    ran = sorted(by_sample[sample_id], key=lambda r: (r["env"], r["policy"]))
    chosen = ran[:max_rows]
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(chosen) + 1.4))
    end = max([e[1] for r in chosen for e in r["explored"]] + [1.0])
    for y, r in enumerate(chosen):
        for start, stop, kind in r["explored"]:
            if kind == "caption":
                continue
            ax.broken_barh([(start, max(stop - start, end / 400))], (y - 0.3, 0.6), color="#4677d8")
        if r.get("window"):
            s, e = r["window"]
            ax.broken_barh([(s, max(e - s, end / 400))], (y - 0.12, 0.24), color="#f39c12")
    for gt in chosen[0].get("gt_intervals") or []:
        ax.axvspan(gt[0], gt[1], color="#2ca02c", alpha=0.25)
    ax.set_yticks(range(len(chosen)), [f"{r['policy']} ({r['env']})" for r in chosen], fontsize=7)
    ax.set_xlabel("seconds (blue: looked at, orange: answer window, green: ground truth)")
    dropped = f" (first {len(chosen)} of {len(ran)} runs)" if len(ran) > len(chosen) else ""
    ax.set_title(f"Exploration on {sample_id}{dropped}")
    _note(fig, simulated)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name


def reliability(path: Path, records: Sequence[dict[str, Any]], simulated: bool) -> str:
    """Reliability diagram of every graded VLM confidence seen in the run."""
    pairs = [(c, ok) for r in records for c, ok in r.get("vlm_readings") or [] if ok is not None]
    if not pairs:
        return ""
    plt = _pyplot()
    conf = np.array([c for c, _ in pairs])
    correct = np.array([ok for _, ok in pairs], dtype=float)
    bins = [b for b in reliability_bins(conf, correct) if b.count]
    fig, ax = plt.subplots(figsize=(4.8, 4.6))
    ax.plot([0, 1], [0, 1], color="#999", linestyle="--", linewidth=1)
    ax.bar([b.lo for b in bins], [b.accuracy for b in bins], width=[b.hi - b.lo for b in bins],
           align="edge", edgecolor="#333", alpha=0.7)  # fmt: skip
    ax.set_xlabel("VLM confidence")
    ax.set_ylabel("accuracy")
    ax.set_title(f"Reliability of {len(pairs)} VLM answers")
    _note(fig, simulated)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name
