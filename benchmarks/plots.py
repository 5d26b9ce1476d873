"""Plots of a run (PNG, PDF or SVG; matplotlib), drawn at a paper's widths.

The cost-accuracy frontier (accuracy against the unified cost, model tokens, and against
VLM calls, with each env's Pareto front) is here; heat-maps of accuracy (with CIs) and
GToU per category, an exploration timeline and the reliability of the VLM confidences
seen are in :mod:`benchmarks.plots_runs`.

Each policy keeps one colour in every plot of every run (:func:`policy_colour`: the
built-in policies have fixed colours, other names a colour derived from the name); the
marker is the env, and keys list the policies grouped by env. Rows are named as the
tables name them (:func:`~benchmarks.summary.row_label`); rows with identical results
share one marker and one key entry, and markers at one cost are drawn side by side.
Figures are 7 in (two columns) or 3.4 in (one column) wide, their text 6.5 pt or larger
(:data:`~benchmarks.plot_style.PAPER_RC`).
"""

from __future__ import annotations

import hashlib
import itertools
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.figures import env_rank, figure, finite, number, pyplot, save
from benchmarks.plot_style import PAGE_WIDTH, PlotOptions
from benchmarks.summary import row_label
from video_env._optional import require
from video_env.provenance import SIMULATED, Provenance


def plot_all(
    folder: Path,
    records: Sequence[dict[str, Any]],
    rows: Sequence[dict[str, Any]],
    categories: Sequence[dict[str, Any]],
    options: PlotOptions | None = None,
) -> list[str]:
    """Write every plot into ``folder``; return the file names."""
    from benchmarks.plots_runs import per_category, reliability, timeline

    opts = options or PlotOptions()
    simulated = Provenance.of(records).has(SIMULATED)
    suites = ", ".join(sorted({str(r["source"]) for r in records if r.get("source")}))
    written = [
        frontier(folder / opts.file("frontier"), rows, simulated, opts),
        per_category(folder / opts.file("categories"), categories, simulated, suites, opts),
        timeline(folder / opts.file("timeline"), records, simulated, opts),
        reliability(folder / opts.file("reliability"), records, simulated, opts),
    ]
    return [p for p in written if p]


MARKERS = {"pacing": "o", "zoom": "s", "clip_query": "^", "tools": "D"}
#: Line colour of each env's Pareto front.
_FRONT_COLOURS = {"zoom": "#34495e", "pacing": "#d35400", "clip_query": "#16a085"}

#: The built-in policies' colours (tab20's order), fixed so that a policy looks the same in
#: every run and plot; the env shows in the marker.
_FIXED = (
    "falconeye", "falconeye-flash", "sequential", "sequential-bp", "iterative-sampling",
    "socratic", "socratic-short", "uniform", "blind-llm", "random", "pacing-1x",
    "pacing-2x@0.8", "pacing-4x", "pacing-maskable-ppo", "pacing-ppo", "pacing-dqn",
    "videoscout", "videoagent", "uniform-8", "uniform-frames",
)  # fmt: skip


def base_name(policy: str) -> str:
    """The policy's name without ``[offline]``, a fallback note or a family's argument."""
    name = policy.split(" (")[0].split("[")[0].strip()
    family, colon, _ = name.partition(":")
    return family if colon and family.startswith(("pacing-", "videoscout", "uniform-")) else name


def policy_colour(policy: str) -> tuple[float, ...]:
    """The policy's colour: fixed for the built-in ones, from a hash of the name otherwise."""
    plt = pyplot()
    name = base_name(policy)
    if name in _FIXED:
        return tuple(plt.get_cmap("tab20").colors[_FIXED.index(name) % 20])
    digest = int(hashlib.blake2b(name.encode(), digest_size=4).hexdigest(), 16)
    return tuple(plt.get_cmap("tab20b").colors[digest % 20])


def pareto_front(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both cost (lower) and accuracy (higher), by cost."""
    front: list[tuple[float, float]] = []
    for x, y in sorted(points, key=lambda p: (p[0], -p[1])):
        if not front or y > front[-1][1]:
            front.append((x, y))
    return front


#: The values a frontier point shows: rows equal in all of them are one point.
_SHOWN = ("accuracy", "acc_ci_low", "acc_ci_high", "mean_model_tokens", "mean_vlm_calls")


def merge_identical(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (env, shown values): rows that would draw one marker share one label.

    The merged row keeps the first row's values and colour, and its ``label`` joins the
    rows' names with ``=`` (one a line), so no marker hides another.
    """
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (env_rank(r["env"]), row_label(r))):
        key = (row["env"], *(round(number(row.get(k)), 9) for k in _SHOWN))
        groups[key].append(row)
    return [
        {**same[0], "label": "\n= ".join(row_label(r) for r in same)} for same in groups.values()
    ]


def dodge(xs: Sequence[float], ys: Sequence[float], scale: str, step: float = 4.5) -> list[float]:
    """Horizontal offsets (points) that set markers at one cost side by side.

    Markers whose x lie within 1.2 % of the panel's (log or symlog) span form a cluster;
    a cluster of ``k`` is spread ``step`` points apart around its place, ordered by y.
    """
    t = np.array([_scaled(x, scale) for x in xs])
    span = max(float(np.ptp(t)), 1e-9) if len(t) else 1.0
    order = sorted(range(len(t)), key=lambda i: (t[i], ys[i]))
    offsets = [0.0] * len(t)
    cluster: list[int] = []
    for i in [*order, None]:
        if i is not None and cluster and (t[i] - t[cluster[-1]]) / span < 0.012:
            cluster.append(i)
            continue
        for k, j in enumerate(sorted(cluster, key=lambda j: ys[j])):
            offsets[j] = (k - (len(cluster) - 1) / 2) * step
        cluster = [i] if i is not None else []
    return offsets


def _scaled(x: float, scale: str) -> float:
    """``x`` as the axis lays it out (log10, or symlog with a linear part below 1)."""
    if scale == "log":
        return float(np.log10(max(x, 1e-12)))
    return float(np.sign(x) * np.log10(1 + abs(x)))


def frontier(
    path: Path, rows: Sequence[dict[str, Any]], simulated: bool, options: PlotOptions
) -> str:
    """Accuracy against the unified cost (model tokens) and against VLM calls.

    One point per (env, policy) with its 95 % CI, a step line through each env's Pareto
    front; colours name the policies and marker shapes the envs, in a key beside the
    plots grouped by env (no labels on the points, so none overlap). Rows with identical
    values are one point (:func:`merge_identical`); points at one cost are set side by
    side (:func:`dodge`), which the figure says.
    """
    plt = pyplot()
    transforms = require("matplotlib.transforms", "bench", "benchmark plots")
    merged = merge_identical(rows)
    views = (
        ("mean_model_tokens", "model tokens per episode (log):\nvisual (VLM, captioner, "
         "CLIP) + LLM", "log", "Accuracy vs model tokens"),
        ("mean_vlm_calls", "VLM calls per episode (symlog)\ncaptioner and CLIP not counted",
         "symlog", "Accuracy vs VLM calls"),
    )  # fmt: skip
    with figure(1, 2, figsize=(PAGE_WIDTH, 3.6), sharey=True) as (fig, axes):
        handles: dict[str, list[Any]] = defaultdict(list)
        for ax, (key, label, scale, title) in zip(axes, views, strict=True):
            shown = [r for r in merged if finite(r[key]) and finite(r["accuracy"])]
            offsets = dodge([float(r[key]) for r in shown], [r["accuracy"] for r in shown], scale)
            for row, dx in zip(shown, offsets, strict=True):
                y = row["accuracy"]
                low, high = max(0.0, y - row["acc_ci_low"]), max(0.0, row["acc_ci_high"] - y)
                line = ax.errorbar(
                    row[key], y, yerr=[[low], [high]], marker=MARKERS.get(row["env"], "o"),
                    markersize=5, capsize=2, elinewidth=0.9, linestyle="none",
                    color=policy_colour(row["policy"]), label=row["label"],
                    transform=transforms.offset_copy(ax.transData, fig=fig, x=dx, units="points"),
                )  # fmt: skip
                if ax is axes[0]:
                    handles[row["env"]].append(line)
            # the offset markers do not widen the axes (their transform is not data): the
            # data points themselves, drawn invisibly, set the limits
            ax.plot([float(r[key]) for r in shown], [r["accuracy"] for r in shown],
                    linestyle="none", marker="none")  # fmt: skip
            for env in sorted({r["env"] for r in shown}, key=env_rank):
                points = [(float(r[key]), float(r["accuracy"])) for r in shown if r["env"] == env]
                front = pareto_front(points)
                if len(front) > 1:
                    xs, ys = zip(*front, strict=True)
                    ax.step(xs, ys, where="post", color=_FRONT_COLOURS.get(env, "#777"),
                            linewidth=1, alpha=0.6, zorder=0)  # fmt: skip
            cost_ticks(ax, scale, [float(r[key]) for r in shown])
            ax.margins(x=0.08)  # room for the markers set side by side at the ends
            ax.set_xlabel(label)
            ax.set_title(title)
            ax.set_ylim(0, 1.05)
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("accuracy (95 % CI, bootstrap over videos)")
        keys: list[Any] = []
        for env in sorted(handles, key=env_rank):
            heading = plt.Line2D([], [], marker=MARKERS.get(env, "o"), linestyle="-",
                                 linewidth=1, color=_FRONT_COLOURS.get(env, "#555"),
                                 label=f"{env} (line: Pareto front)")  # fmt: skip
            keys += [heading, *handles[env]]
        headings = {id(key) for key in keys if key.get_label().endswith("(line: Pareto front)")}
        labels = [k.get_label() if id(k) in headings else _wrapped(k.get_label()) for k in keys]
        fig.legend(keys, labels, loc="center left",
                   bbox_to_anchor=(0.71, 0.5), frameon=False, fontsize=6.5,
                   handletextpad=0.3, labelspacing=0.3)  # fmt: skip
        fig.tight_layout(rect=(0, 0.03, 0.71, 1))
        for ax in axes:
            drop_overlapping_labels(fig, ax)
        return save(fig, path, options, simulated, "markers at one cost drawn side by side")


#: Longest legend line: a longer row name breaks before its settings (``(dvd rules)``).
_LEGEND_CHARS = 30


def _wrapped(label: str) -> str:
    """A legend label broken before its parenthesis when it would pass the legend's width."""
    if len(label) <= _LEGEND_CHARS or " (" not in label:
        return label
    name, _, rest = label.partition(" (")
    return f"{name}\n({rest}"


def cost_ticks(ax: Any, scale: str, xs: Sequence[float]) -> None:
    """Set a cost axis's ``scale`` and ticks whose labels fit whatever span ``xs`` covers.

    Labels are short numbers (``200``, ``1.5k``, ``10M``), minor ticks unlabelled. Inside
    one decade (a log axis of 1.2M-1.9M tokens has no power of 10 and crowds its minor
    labels) the ticks are evenly stepped numbers (1.2M, 1.4M…); over a few decades 1-2-5
    steps of each decade; over more, the powers of 10 only.
    """
    ticker = require("matplotlib.ticker", "bench", "benchmark plots")
    # the logarithmic part of the span: symlog is linear below 1
    kept = [x for x in xs if x > 0] if scale == "log" else [max(x, 1.0) for x in xs]
    decades = float(np.log10(max(kept) / min(kept))) if kept else 0.0
    subs = (1.0, 2.0, 5.0) if decades < 2 else (1.0,)
    if scale == "log":
        ax.set_xscale("log")
        locator = ticker.LogLocator(base=10, subs=subs)
    else:
        ax.set_xscale("symlog", linthresh=1)
        locator = ticker.SymmetricalLogLocator(base=10, linthresh=1, subs=subs)
    if kept and decades < 1:
        locator = ticker.MaxNLocator(nbins=4, steps=[1, 2, 5, 10])
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ticker.EngFormatter(sep=""))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())


def drop_overlapping_labels(fig: Any, ax: Any) -> None:
    """Keep every other x tick of ``ax`` until no two of its labels overlap as drawn.

    The guard behind :func:`cost_ticks`' choice: it measures the labels at the figure's
    final layout, so a long label or a narrow panel cannot make them collide.
    """
    ticker = require("matplotlib.ticker", "bench", "benchmark plots")
    while True:
        boxes = sorted(_label_boxes(fig, ax), key=lambda b: b.x0)
        if not any(a.overlaps(b) for a, b in itertools.pairwise(boxes)) or len(boxes) <= 2:
            return
        low, high = sorted(ax.get_xlim())
        ticks = [t for t in ax.get_xticks() if low <= t <= high]
        ax.xaxis.set_major_locator(ticker.FixedLocator(ticks[::2]))


def _label_boxes(fig: Any, ax: Any) -> list[Any]:
    """The boxes on the drawn canvas of ``ax``'s major x tick labels that show text."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    labels = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
    return [t.get_window_extent(renderer) for t in labels]
