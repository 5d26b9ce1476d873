"""Plots of a run (PNG, matplotlib).

The cost-accuracy frontier (accuracy against the unified cost, model tokens, and against
VLM calls), heat-maps of accuracy (with CIs) and GToU per category, an exploration
timeline, and the reliability of the VLM confidences seen.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from video_env._optional import require
from video_env.metrics.calibration import ece, reliability_bins

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


_MARKERS = {"pacing": "o", "zoom": "s", "clip_query": "^"}


def frontier(path: Path, rows: Sequence[dict[str, Any]], simulated: bool) -> str:
    """Accuracy against the unified cost (model tokens) and against VLM calls.

    One point per (env, policy) with its 95 % CI; colours name the policies and marker
    shapes the envs, in a key beside the plots (no labels on the points, so none overlap).
    """
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.2), sharey=True)
    colours = plt.get_cmap("tab20").colors
    views = (
        ("mean_model_tokens", "model tokens per episode (visual tokens of VLM, captioner and "
         "CLIP + LLM tokens; log)", "log"),
        ("mean_vlm_calls", "VLM calls per episode (symlog)", "symlog"),
    )  # fmt: skip
    ticker = require("matplotlib.ticker", "bench", "benchmark plots")
    for ax, (key, label, scale) in zip(axes, views, strict=True):
        for k, row in enumerate(rows):
            x, y = row[key], row["accuracy"]
            ax.errorbar(
                x, y, yerr=[[max(0.0, y - row["acc_ci_low"])], [max(0.0, row["acc_ci_high"] - y)]],
                marker=_MARKERS.get(row["env"], "o"), markersize=7, capsize=3, linestyle="none",
                color=colours[k % len(colours)], label=f"{row['policy']} ({row['env']})",
            )  # fmt: skip
        if scale == "log":
            ax.set_xscale("log")
        else:
            ax.set_xscale("symlog", linthresh=1)
            # 1-2-5 ticks with plain numbers: a range such as 13-48 calls has no power of ten
            ax.xaxis.set_major_locator(
                ticker.SymmetricalLogLocator(base=10, linthresh=1, subs=(1, 2, 5))
            )
            ax.xaxis.set_major_formatter(ticker.ScalarFormatter())
        ax.set_xlabel(label, fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("accuracy (95 % CI, bootstrap over videos)")
    axes[0].set_title("Accuracy vs unified cost (model tokens)")
    axes[1].set_title("Accuracy vs VLM calls (captioner and CLIP not counted)")
    handles, labels = axes[0].get_legend_handles_labels()
    shapes = [plt.Line2D([], [], marker=m, color="#555", linestyle="none", label=f"env: {e}")
              for e, m in _MARKERS.items() if any(r["env"] == e for r in rows)]  # fmt: skip
    fig.legend(handles + shapes, labels + [h.get_label() for h in shapes], fontsize=7,
               loc="center left", bbox_to_anchor=(0.80, 0.5), frameon=False)  # fmt: skip
    _note(fig, simulated)
    fig.tight_layout(rect=(0, 0.02, 0.80, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name


def per_category(path: Path, categories: Sequence[dict[str, Any]], simulated: bool) -> str:
    """Heat-maps of accuracy (with its 95 % CI) and GToU: (env, policy) x category."""
    plt = _pyplot()
    names = sorted({c["category"] for c in categories})
    runs = sorted({(c["env"], c["policy"]) for c in categories})
    table = {(c["env"], c["policy"], c["category"]): c for c in categories}
    fig, axes = plt.subplots(
        1, 2, figsize=(4 + 1.9 * len(names), 1.2 + 0.42 * len(runs)), sharey=True
    )
    for ax, metric in zip(axes, ("accuracy", "mean_gtou"), strict=True):
        grid = np.array([[table.get((*r, n), {}).get(metric, np.nan) for n in names]
                         for r in runs], dtype=float)  # fmt: skip
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        for i, run in enumerate(runs):
            for j, name in enumerate(names):
                cell = table.get((*run, name))
                if cell is None or grid[i, j] != grid[i, j]:
                    continue
                text = f"{grid[i, j]:.2f}"
                if metric == "accuracy" and "acc_ci_low" in cell:
                    text += f"\n({cell['acc_ci_low']:.2f}–{cell['acc_ci_high']:.2f})"
                ax.text(j, i, text, ha="center", va="center", fontsize=6,
                        color="white" if grid[i, j] < 0.6 else "black")  # fmt: skip
        ax.set_xticks(range(len(names)), names, fontsize=8)
        ax.set_yticks(range(len(runs)), [f"{p} ({e})" for e, p in runs], fontsize=7)
        ax.set_title("accuracy (95 % CI)" if metric == "accuracy" else "mean GToU", fontsize=9)
        fig.colorbar(image, ax=ax, fraction=0.04)
    _note(fig, simulated)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name


def timeline(
    path: Path, records: Sequence[dict[str, Any]], simulated: bool, max_rows: int = 16
) -> str:
    """What each policy looked at on one sample, against the ground truth (green).

    The sample is the one the most (env, policy) pairs ran (ties: the first id), so that
    the policies can be compared on one question; the title says so. Frames seen by a
    model are blue; windows a policy only captioned (clips it read about) are grey.
    """
    plt = _pyplot()
    by_sample: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("explored") is not None:
            by_sample[str(r.get("sample_id"))].append(r)
    if not by_sample:
        return ""
    sample_id = min(
        by_sample, key=lambda s: (-len({(r["env"], r["policy"]) for r in by_sample[s]}), s)
    )
    ran = sorted(by_sample[sample_id], key=lambda r: (r["env"], r["policy"], r.get("seed", 0)))
    chosen = ran[:max_rows]
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(chosen) + 1.6))
    end = max([e[1] for r in chosen for e in r["explored"]] + [1.0])
    for y, r in enumerate(chosen):
        for start, stop, kind in r["explored"]:
            captioned = kind == "caption"
            ax.broken_barh([(start, max(stop - start, end / 400))],
                           (y - (0.18 if captioned else 0.3), 0.36 if captioned else 0.6),
                           color="#bbbbbb" if captioned else "#4677d8")  # fmt: skip
        if r.get("window"):
            s, e = r["window"]
            ax.broken_barh([(s, max(e - s, end / 400))], (y - 0.12, 0.24), color="#f39c12")
    for gt in chosen[0].get("gt_intervals") or []:
        ax.axvspan(gt[0], gt[1], color="#2ca02c", alpha=0.25)
    ax.set_yticks(range(len(chosen)), [f"{r['policy']} ({r['env']})" for r in chosen], fontsize=7)
    ax.set_xlabel("seconds (blue: frames a model saw, grey: captioned only, orange: answer "
                  "window, green: ground truth)", fontsize=8)  # fmt: skip
    dropped = f"; first {len(chosen)} of {len(ran)} runs" if len(ran) > len(chosen) else ""
    ax.set_title(f"Exploration on {sample_id} (the sample the most policies ran{dropped})",
                 fontsize=9)  # fmt: skip
    _note(fig, simulated)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name


def reliability(path: Path, records: Sequence[dict[str, Any]], simulated: bool) -> str:
    """Reliability diagram of every graded VLM confidence seen in the run.

    Pooled over the policies that called the VLM (the title says how many); per-bin
    counts above the bars, the expected calibration error (ECE) in the title.
    """
    pairs = [(c, ok) for r in records for c, ok in r.get("vlm_readings") or [] if ok is not None]
    if not pairs:
        return ""
    plt = _pyplot()
    conf = np.array([c for c, _ in pairs])
    correct = np.array([ok for _, ok in pairs], dtype=float)
    bins = [b for b in reliability_bins(conf, correct) if b.count]
    pooled = sorted({r["policy"] for r in records if r.get("vlm_readings")})
    fig, ax = plt.subplots(figsize=(5.2, 4.8))
    ax.plot([0, 1], [0, 1], color="#999", linestyle="--", linewidth=1)
    ax.bar([b.lo for b in bins], [b.accuracy for b in bins], width=[b.hi - b.lo for b in bins],
           align="edge", edgecolor="#333", alpha=0.7)  # fmt: skip
    for b in bins:
        ax.text((b.lo + b.hi) / 2, min(b.accuracy, 0.93) + 0.02, f"n={b.count}", ha="center",
                fontsize=6)  # fmt: skip
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("VLM confidence")
    ax.set_ylabel("accuracy")
    ax.set_title(f"Reliability of {len(pairs)} VLM answers, ECE {ece(conf, correct):.3f}\n"
                 f"pooled over {len(pooled)} policies", fontsize=9)  # fmt: skip
    _note(fig, simulated)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name
