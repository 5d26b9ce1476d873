"""Plots of a run's categories and episodes: heat-maps, a timeline, a reliability diagram.

Drawn as :mod:`benchmarks.plots` draws (:func:`~benchmarks.figures.figure` and
:func:`~benchmarks.figures.save`, a paper's widths and type sizes), with rows named as the
tables name them.
"""

from __future__ import annotations

import textwrap
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.figures import env_rank, figure, number, save
from benchmarks.plot_style import COLUMN_WIDTH, PAGE_WIDTH, PlotOptions
from benchmarks.summary import record_label, row_label
from video_env.metrics.calibration import ece, reliability_bins

#: Colours of the timeline: frames a model saw, windows only captioned, the answer's window,
#: the ground truth.
SEEN, CAPTIONED, WINDOW, TRUTH = "#4677d8", "#bbbbbb", "#f39c12", "#2ca02c"


def per_category(
    path: Path,
    categories: Sequence[dict[str, Any]],
    simulated: bool,
    suite: str,
    options: PlotOptions,
) -> str:
    """Heat-maps of accuracy (with its 95 % CI) and GToU: (env, policy) x category.

    Rows are grouped by env; each column says how many episodes a cell holds (``n``; a
    cell with another count says its own); one colour scale serves both maps.
    """
    names = sorted({c["category"] for c in categories})
    runs = sorted({(c["env"], row_label(c)) for c in categories},
                  key=lambda r: (env_rank(r[0]), r[1]))  # fmt: skip
    table = {(c["env"], row_label(c), c["category"]): c for c in categories}
    counts = {n: Counter(int(c["episodes"]) for c in categories if c["category"] == n)
              for n in names}  # fmt: skip
    usual = {n: counts[n].most_common(1)[0][0] for n in names}
    size = (PAGE_WIDTH, 1.3 + 0.3 * len(runs))
    with figure(1, 2, figsize=size, sharey=True) as (fig, axes):
        for ax, metric in zip(axes, ("accuracy", "mean_gtou"), strict=True):
            grid = np.array([[number(table.get((*r, n), {}).get(metric)) for n in names]
                             for r in runs], dtype=float)  # fmt: skip
            image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
            for i, run in enumerate(runs):
                for j, name in enumerate(names):
                    cell = table.get((*run, name))
                    if cell is None or grid[i, j] != grid[i, j]:
                        continue
                    text = f"{grid[i, j]:.2f}"
                    if metric == "accuracy" and not np.isnan(number(cell.get("acc_ci_low"))):
                        text += f"\n({cell['acc_ci_low']:.2f}–{cell['acc_ci_high']:.2f})"
                    if int(cell["episodes"]) != usual[name]:
                        text += f"\nn={int(cell['episodes'])}"
                    colour = "white" if grid[i, j] < 0.6 else "black"
                    ax.text(j, i, text, ha="center", va="center", fontsize=6, linespacing=1.0,
                            color=colour)  # fmt: skip
            ax.set_xticks(range(len(names)), [f"{n}\n(n={usual[n]})" for n in names])
            ax.set_yticks(range(len(runs)), [f"{p} ({e})" for e, p in runs])
            for k in range(1, len(runs)):
                if runs[k][0] != runs[k - 1][0]:
                    ax.axhline(k - 0.5, color="white", linewidth=2)
            ax.set_title("accuracy (95 % CI)" if metric == "accuracy" else "mean GToU")
        if suite:
            fig.suptitle(f"Per category on {suite} (n: episodes per cell)")
        fig.tight_layout(rect=(0, 0.02, 0.93, 1))
        bar = fig.add_axes((0.94, 0.15, 0.015, 0.7))
        fig.colorbar(image, cax=bar)
        return save(fig, path, options, simulated)


def timeline(
    path: Path,
    records: Sequence[dict[str, Any]],
    simulated: bool,
    options: PlotOptions,
    max_rows: int = 16,
) -> str:
    """What each policy looked at on one sample, against the ground truth.

    The sample is the one the most (env, policy) pairs ran (ties: the first id), so that
    the policies can be compared on one question; the title says so. A legend names the
    colours: frames seen by a model, windows a policy only captioned (clips it read
    about), the window of its answer, the ground truth.
    """
    by_sample: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("explored") is not None:
            by_sample[str(r.get("sample_id"))].append(r)
    if not by_sample:
        return ""
    sample_id = min(
        by_sample, key=lambda s: (-len({(r["env"], r["policy"]) for r in by_sample[s]}), s)
    )
    ran = sorted(by_sample[sample_id],
                 key=lambda r: (env_rank(r["env"]), record_label(r), r.get("seed", 0)))  # fmt: skip
    chosen = ran[:max_rows]
    with figure(figsize=(PAGE_WIDTH, 0.27 * len(chosen) + 1.5)) as (fig, ax):
        end = max([e[1] for r in chosen for e in r["explored"]] + [1.0])
        for y, r in enumerate(chosen):
            for start, stop, kind in r["explored"]:
                captioned = kind == "caption"
                ax.broken_barh([(start, max(stop - start, end / 400))],
                               (y - (0.18 if captioned else 0.3), 0.36 if captioned else 0.6),
                               color=CAPTIONED if captioned else SEEN)  # fmt: skip
            if r.get("window"):
                s, e = r["window"]
                ax.broken_barh([(s, max(e - s, end / 400))], (y - 0.12, 0.24), color=WINDOW)
        for gt in chosen[0].get("gt_intervals") or []:
            ax.axvspan(gt[0], gt[1], color=TRUTH, alpha=0.25)
        ax.set_yticks(range(len(chosen)), [f"{record_label(r)} ({r['env']})" for r in chosen])
        ax.invert_yaxis()  # the first row on top, as the tables read
        ax.set_xlabel("time in the video (seconds)")
        ax.set_ylabel("policy (env)")
        patches = require_patches()
        keys = [patches.Patch(color=c, label=t, alpha=a) for c, t, a in (
            (SEEN, "frames a model saw", 1), (CAPTIONED, "captioned only", 1),
            (WINDOW, "answer window", 1), (TRUTH, "ground truth", 0.25))]  # fmt: skip
        ax.legend(handles=keys, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4,
                  frameon=False, fontsize=6.5)  # fmt: skip
        dropped = f"; first {len(chosen)} of {len(ran)} runs" if len(ran) > len(chosen) else ""
        # the key sits between the title and the plot
        ax.set_title(f"Exploration on {sample_id} (the sample the most policies ran{dropped})",
                     pad=16)  # fmt: skip
        fig.tight_layout(rect=(0, 0.02, 1, 1))
        return save(fig, path, options, simulated)


def require_patches() -> Any:
    """``matplotlib.patches`` (the bench extra's)."""
    from video_env._optional import require

    return require("matplotlib.patches", "bench", "benchmark plots")


#: Bins with fewer answers than this are drawn hatched: their accuracy is noisy.
SPARSE_BIN = 30


def reliability(
    path: Path, records: Sequence[dict[str, Any]], simulated: bool, options: PlotOptions
) -> str:
    """Reliability diagram of every graded VLM confidence seen in the run.

    Pooled over the (env, policy) pairs that called the VLM (named under the plot); per-bin
    counts above the bars, the expected calibration error (ECE) in the title. Bins of
    fewer than :data:`SPARSE_BIN` answers are hatched and a key says so; the title says
    so only when there is such a bin, and otherwise that every bin holds enough.
    """
    pairs = [(c, ok) for r in records for c, ok in r.get("vlm_readings") or [] if ok is not None]
    if not pairs:
        return ""
    conf = np.array([c for c, _ in pairs])
    correct = np.array([ok for _, ok in pairs], dtype=float)
    bins = [b for b in reliability_bins(conf, correct) if b.count]
    pooled = sorted({(r["env"], record_label(r)) for r in records if r.get("vlm_readings")},
                    key=lambda p: (env_rank(p[0]), p[1]))  # fmt: skip
    sparse = [b for b in bins if b.count < SPARSE_BIN]
    with figure(figsize=(COLUMN_WIDTH, 3.6)) as (fig, ax):
        ax.plot([0, 1], [0, 1], color="#999", linestyle="--", linewidth=1)
        for b in bins:
            thin = b.count < SPARSE_BIN
            ax.bar(b.lo, b.accuracy, width=b.hi - b.lo, align="edge", edgecolor="#333",
                   linewidth=0.6, color="#c6dbef" if thin else "#3182bd",
                   hatch="////" if thin else None)  # fmt: skip
            ax.text((b.lo + b.hi) / 2, b.accuracy + 0.02, f"{b.count}", ha="center",
                    fontsize=6)  # fmt: skip
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.25)  # headroom above every bar and its count for the key
        ax.set_yticks(np.linspace(0, 1, 6))
        ax.set_xlabel("VLM confidence (10 bins)")
        ax.set_ylabel("accuracy")
        if sparse:
            patch = require_patches().Patch(facecolor="#c6dbef", edgecolor="#333", hatch="////",
                                            label=f"fewer than {SPARSE_BIN} answers")  # fmt: skip
            ax.legend(handles=[patch], loc="upper left", frameon=False)
            said = f"hatched: {len(sparse)} bin(s) of fewer than {SPARSE_BIN} answers"
        else:
            said = f"every bin holds {SPARSE_BIN} answers or more"
        said = f"ECE {ece(conf, correct):.3f}; {said}"
        ax.set_title(f"Reliability of {len(pairs)} graded VLM answers\n{said}\n"
                     "(number on a bar: its answers)", fontsize=7.5)  # fmt: skip
        names = ", ".join(f"{p} ({e})" for e, p in pooled)
        wrapped = textwrap.fill(f"pooled over {len(pooled)} env × policy pairs: {names}", 70)
        fig.text(0.01, 0.035, wrapped, fontsize=5.5, va="bottom")
        lines = wrapped.count("\n") + 1
        fig.tight_layout(rect=(0, 0.05 + 0.024 * lines, 1, 1))
        return save(fig, path, options, simulated)
