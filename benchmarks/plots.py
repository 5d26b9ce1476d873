"""Plots of a run (PNG, matplotlib).

The cost-accuracy frontier (accuracy against the unified cost, model tokens, and against
VLM calls, with each env's Pareto front), heat-maps of accuracy (with CIs) and GToU per
category, an exploration timeline, and the reliability of the VLM confidences seen.

Each policy keeps one colour in every plot of every run (:func:`policy_colour`: the
built-in policies have fixed colours, other names a colour derived from the name); the
marker is the env, and keys list the policies grouped by env.
"""

from __future__ import annotations

import hashlib
import textwrap
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from video_env._optional import require
from video_env.metrics.calibration import ece, reliability_bins
from video_env.provenance import SIMULATED, Provenance

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
    simulated = Provenance.of(records).has(SIMULATED)
    suites = sorted({str(r["source"]) for r in records if r.get("source")})
    written = [
        frontier(folder / "frontier.png", rows, simulated),
        per_category(folder / "categories.png", categories, simulated, ", ".join(suites)),
        timeline(folder / "timeline.png", records, simulated),
        reliability(folder / "reliability.png", records, simulated),
    ]
    return [p for p in written if p]


_MARKERS = {"pacing": "o", "zoom": "s", "clip_query": "^"}
_ENV_ORDER = ("zoom", "pacing", "clip_query")
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
    plt = _pyplot()
    name = base_name(policy)
    if name in _FIXED:
        return tuple(plt.get_cmap("tab20").colors[_FIXED.index(name) % 20])
    digest = int(hashlib.blake2b(name.encode(), digest_size=4).hexdigest(), 16)
    return tuple(plt.get_cmap("tab20b").colors[digest % 20])


def _env_rank(env: str) -> int:
    return _ENV_ORDER.index(env) if env in _ENV_ORDER else len(_ENV_ORDER)


def pareto_front(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both cost (lower) and accuracy (higher), by cost."""
    front: list[tuple[float, float]] = []
    for x, y in sorted(points, key=lambda p: (p[0], -p[1])):
        if not front or y > front[-1][1]:
            front.append((x, y))
    return front


def frontier(path: Path, rows: Sequence[dict[str, Any]], simulated: bool) -> str:
    """Accuracy against the unified cost (model tokens) and against VLM calls.

    One point per (env, policy) with its 95 % CI, a step line through each env's Pareto
    front; colours name the policies and marker shapes the envs, in a key beside the
    plots grouped by env (no labels on the points, so none overlap).
    """
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.2), sharey=True)
    ordered = sorted(rows, key=lambda r: (_env_rank(r["env"]), r["policy"]))
    views = (
        ("mean_model_tokens", "model tokens per episode (visual tokens of VLM, captioner and "
         "CLIP + LLM tokens; log)", "log"),
        ("mean_vlm_calls", "VLM calls per episode (symlog)", "symlog"),
    )  # fmt: skip
    ticker = require("matplotlib.ticker", "bench", "benchmark plots")
    handles: dict[str, list[Any]] = defaultdict(list)
    for ax, (key, label, scale) in zip(axes, views, strict=True):
        plotted = [r for r in ordered if _finite(r[key]) and _finite(r["accuracy"])]
        for row in plotted:
            x, y = row[key], row["accuracy"]
            line = ax.errorbar(
                x, y, yerr=[[max(0.0, y - row["acc_ci_low"])], [max(0.0, row["acc_ci_high"] - y)]],
                marker=_MARKERS.get(row["env"], "o"), markersize=7, capsize=3, linestyle="none",
                color=policy_colour(row["policy"]), label=row["policy"],
            )  # fmt: skip
            if ax is axes[0]:
                handles[row["env"]].append(line)
        for env in sorted({r["env"] for r in plotted}, key=_env_rank):
            points = [(float(r[key]), float(r["accuracy"])) for r in plotted if r["env"] == env]
            front = pareto_front(points)
            if len(front) > 1:
                xs, ys = zip(*front, strict=True)
                ax.step(xs, ys, where="post", color=_FRONT_COLOURS.get(env, "#777"),
                        linewidth=1, alpha=0.6, zorder=0)  # fmt: skip
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
    axes[0].set_title("Accuracy vs unified cost (model tokens)", fontsize=10)
    axes[1].set_title("Accuracy vs VLM calls (captioner and CLIP not counted)", fontsize=10)
    keys: list[Any] = []
    for env in sorted(handles, key=_env_rank):
        heading = plt.Line2D([], [], marker=_MARKERS.get(env, "o"), linestyle="-", linewidth=1,
                             color=_FRONT_COLOURS.get(env, "#555"),
                             label=f"{env} (line: Pareto front)")  # fmt: skip
        keys += [heading, *handles[env]]
    fig.legend(keys, [k.get_label() for k in keys], fontsize=7.5, loc="center left",
               bbox_to_anchor=(0.80, 0.5), frameon=False)  # fmt: skip
    _note(fig, simulated)
    fig.tight_layout(rect=(0, 0.02, 0.80, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name


def per_category(
    path: Path, categories: Sequence[dict[str, Any]], simulated: bool, suite: str = ""
) -> str:
    """Heat-maps of accuracy (with its 95 % CI) and GToU: (env, policy) x category.

    Rows are grouped by env; each column says how many episodes a cell holds (``n``; a
    cell with another count says its own); text is 8 pt or larger.
    """
    plt = _pyplot()
    names = sorted({c["category"] for c in categories})
    runs = sorted({(c["env"], c["policy"]) for c in categories},
                  key=lambda r: (_env_rank(r[0]), r[1]))  # fmt: skip
    table = {(c["env"], c["policy"], c["category"]): c for c in categories}
    counts = {n: Counter(int(c["episodes"]) for c in categories if c["category"] == n)
              for n in names}  # fmt: skip
    usual = {n: counts[n].most_common(1)[0][0] for n in names}
    fig, axes = plt.subplots(
        1, 2, figsize=(4.5 + 2.3 * len(names), 1.6 + 0.62 * len(runs)), sharey=True
    )
    for ax, metric in zip(axes, ("accuracy", "mean_gtou"), strict=True):
        grid = np.array([[_number(table.get((*r, n), {}).get(metric)) for n in names]
                         for r in runs], dtype=float)  # fmt: skip
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        for i, run in enumerate(runs):
            for j, name in enumerate(names):
                cell = table.get((*run, name))
                if cell is None or grid[i, j] != grid[i, j]:
                    continue
                text = f"{grid[i, j]:.2f}"
                if metric == "accuracy" and not np.isnan(_number(cell.get("acc_ci_low"))):
                    text += f"\n({cell['acc_ci_low']:.2f}–{cell['acc_ci_high']:.2f})"
                if int(cell["episodes"]) != usual[name]:
                    text += f"\nn={int(cell['episodes'])}"
                ax.text(j, i, text, ha="center", va="center", fontsize=8,
                        color="white" if grid[i, j] < 0.6 else "black")  # fmt: skip
        ax.set_xticks(range(len(names)), [f"{n}\n(n={usual[n]})" for n in names], fontsize=9)
        ax.set_yticks(range(len(runs)), [f"{p} ({e})" for e, p in runs], fontsize=9)
        for k in range(1, len(runs)):
            if runs[k][0] != runs[k - 1][0]:
                ax.axhline(k - 0.5, color="white", linewidth=2)
        ax.set_title("accuracy (95 % CI)" if metric == "accuracy" else "mean GToU", fontsize=10)
        fig.colorbar(image, ax=ax, fraction=0.04)
    if suite:
        fig.suptitle(f"Per category on {suite} (n: episodes per cell)", fontsize=11)
    _note(fig, simulated)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name


def _finite(value: Any) -> bool:
    """Whether a table value is a number that can be drawn (not missing, empty or NaN)."""
    return bool(np.isfinite(_number(value)))


def _number(value: Any) -> float:
    """A table value as a float (NaN for a missing or empty one)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


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


#: Bins with fewer answers than this are drawn hatched: their accuracy is noisy.
SPARSE_BIN = 30


def reliability(path: Path, records: Sequence[dict[str, Any]], simulated: bool) -> str:
    """Reliability diagram of every graded VLM confidence seen in the run.

    Pooled over the (env, policy) pairs that called the VLM (named under the plot); per-bin
    counts above the bars, bins with fewer than :data:`SPARSE_BIN` answers hatched, the
    expected calibration error (ECE) in the title.
    """
    pairs = [(c, ok) for r in records for c, ok in r.get("vlm_readings") or [] if ok is not None]
    if not pairs:
        return ""
    plt = _pyplot()
    conf = np.array([c for c, _ in pairs])
    correct = np.array([ok for _, ok in pairs], dtype=float)
    bins = [b for b in reliability_bins(conf, correct) if b.count]
    pooled = sorted({(r["env"], r["policy"]) for r in records if r.get("vlm_readings")},
                    key=lambda p: (_env_rank(p[0]), p[1]))  # fmt: skip
    fig, ax = plt.subplots(figsize=(6.0, 5.6))
    ax.plot([0, 1], [0, 1], color="#999", linestyle="--", linewidth=1)
    for b in bins:
        sparse = b.count < SPARSE_BIN
        ax.bar(b.lo, b.accuracy, width=b.hi - b.lo, align="edge", edgecolor="#333",
               color="#9ecae1" if sparse else "#3182bd", hatch="//" if sparse else None,
               alpha=0.9)  # fmt: skip
        ax.text((b.lo + b.hi) / 2, min(b.accuracy, 0.93) + 0.02, f"n={b.count}", ha="center",
                fontsize=8)  # fmt: skip
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("VLM confidence (10 bins)")
    ax.set_ylabel("accuracy")
    ax.set_title(f"Reliability of {len(pairs)} graded VLM answers, ECE {ece(conf, correct):.3f}"
                 f"\nhatched: bins of fewer than {SPARSE_BIN} answers", fontsize=10)  # fmt: skip
    names = ", ".join(f"{p} ({e})" for e, p in pooled)
    wrapped = textwrap.fill(f"pooled over {len(pooled)} env × policy pairs: {names}", 95)
    fig.text(0.01, 0.035, wrapped, fontsize=7, va="bottom")
    _note(fig, simulated)
    lines = wrapped.count("\n") + 1
    fig.tight_layout(rect=(0, 0.05 + 0.022 * lines, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path.name
