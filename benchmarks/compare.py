"""``video-env bench compare A B``: paired differences (B - A) between two runs.

Episodes are paired by question (sample id and seed) within each (env, policy) both runs
have. The accuracy difference is the mean over paired questions of ``correct_B -
correct_A``, with a 95 % bootstrap CI that resamples videos (questions about one video
are correlated, as in the summary's CIs) and keeps each question's pair together. Other
metrics are differences of means over the same paired questions. When the two runs'
fingerprints differ, the table says so first, naming what differs (from ``run.json``).
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.provenance import differences
from benchmarks.run_folder import planned_records, read_run_json
from benchmarks.summary import model_tokens, record_label, with_known_rules
from video_env.errors import ConfigError
from video_env.metrics.bootstrap import cluster_bootstrap_ci

#: Metrics compared as differences of means over the paired questions.
METRICS = ("gtou", "vlm_calls", "model_tokens", "frames")
#: Decimals shown per column: fractions to 3, counts of calls to 1, frames and tokens whole.
DECIMALS = {"accuracy": 3, "gtou": 3, "vlm_calls": 1, "model_tokens": 0, "frames": 0}

Pair = tuple[dict[str, Any], dict[str, Any]]
#: A run's records by (env, policy), then by question (sample id, seed).
Runs = dict[tuple[str, str], dict[tuple[str, int], Any]]


def _value(record: dict[str, Any], metric: str) -> float:
    if metric == "model_tokens":
        return float(model_tokens(record))
    value = record.get(metric)
    return float(value) if value is not None else float("nan")


def _runs(folder: str | os.PathLike[str]) -> Runs:
    records = with_known_rules(planned_records(folder, _meta(folder)))
    if not records:
        raise ConfigError(f"{folder} holds no episode records")
    out: dict[tuple[str, str], dict[tuple[str, int], Any]] = defaultdict(dict)
    for r in records:
        policy = record_label(r)  # as the tables name it; other rules: another setting
        out[(r["env"], policy)][(str(r.get("sample_id")), int(r.get("seed") or 0))] = r
    return out


def _meta(folder: str | os.PathLike[str]) -> dict[str, Any]:
    return read_run_json(folder, missing_ok=True)


def setup_note(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> str:
    """A line saying whether the two runs had the same set-up, and what differs."""
    ma, mb = _meta(a), _meta(b)
    fa, fb = ma.get("fingerprint"), mb.get("fingerprint")
    if fa and fa == fb:
        return f"Same set-up (fingerprint {fa})."
    if "provenance" in ma and "provenance" in mb:
        diff = differences(ma["provenance"], mb["provenance"])
        return f"WARNING: the set-ups differ (fingerprints {fa} vs {fb}): " + "; ".join(diff)
    return f"WARNING: the set-ups may differ (fingerprints {fa} vs {fb}; no provenance recorded)."


def paired_rows(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """One row per (env, policy) both runs have: paired deltas and the accuracy CI."""
    return _paired(_runs(a), _runs(b))


def _paired(left: Runs, right: Runs) -> list[dict[str, Any]]:
    rows = []
    for key in sorted(set(left) & set(right)):
        shared = sorted(set(left[key]) & set(right[key]))
        pairs: list[Pair] = [(left[key][q], right[key][q]) for q in shared]
        graded = [(x, y) for x, y in pairs if x.get("correct") is not None
                  and y.get("correct") is not None]  # fmt: skip
        deltas = [float(bool(y["correct"])) - float(bool(x["correct"])) for x, y in graded]
        low, high = cluster_bootstrap_ci(deltas, [str(x.get("video_id")) for x, _ in graded])
        row: dict[str, Any] = {
            "env": key[0], "policy": key[1], "paired": len(pairs),
            "unpaired": len(left[key]) + len(right[key]) - 2 * len(pairs),
            "accuracy": float(np.mean(deltas)) if deltas else float("nan"),
            "acc_ci_low": low, "acc_ci_high": high,
        }  # fmt: skip
        for metric in METRICS:
            values = [_value(y, metric) - _value(x, metric) for x, y in pairs]
            known = [v for v in values if not np.isnan(v)]  # a metric records may not have
            row[metric] = float(np.mean(known)) if known else float("nan")
        rows.append(row)
    return rows


def compare(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> str:
    """A Markdown report of B - A, paired by question (see the module docstring).

    Only records of the jobs each folder's ``run.json`` planned count. The table holds the
    (env, policy) pairs both runs have; those of one run only are listed under it, in one
    line per run (``only in A (2): uniform (zoom), …``).

    Raises:
        ConfigError: If a folder holds no records, or its ``run.json`` is damaged.
    """
    left, right = _runs(a), _runs(b)
    rows = _paired(left, right)
    lines = [
        f"A = {Path(a)}, B = {Path(b)}: B − A, paired by question (sample and seed).",
        setup_note(a, b),
        "",
        "| env | policy | paired | Δ accuracy (95 % CI) | "
        + " | ".join(f"Δ {m}" for m in METRICS) + " |",
        "|" + "---|" * (4 + len(METRICS)),
    ]  # fmt: skip
    for r in rows:
        low, high = _signed(r["acc_ci_low"]), _signed(r["acc_ci_high"])
        acc = f"{_signed(r['accuracy'])} ({low} to {high})"
        paired = f"{r['paired']}" + (f" ({r['unpaired']} unpaired)" if r["unpaired"] else "")
        cells = " | ".join(_signed(r[m], DECIMALS[m]) for m in METRICS)
        lines.append(f"| {r['env']} | {r['policy']} | {paired} | {acc} | {cells} |")
    if not rows:
        lines.append("| — | no (env, policy) is in both runs |" + " |" * (2 + len(METRICS)))
    if any(r["paired"] == 0 for r in rows):
        lines += ["", "—: no question (sample and seed) is in both runs; compare runs of the "
                  "same samples and seeds."]  # fmt: skip
    unpaired = [
        _only_line(side, keys)
        for side, keys in (("A", set(left) - set(right)), ("B", set(right) - set(left)))
        if keys
    ]
    if unpaired:
        lines += ["", *unpaired]
    return "\n".join(lines) + "\n"


def _only_line(side: str, keys: set[tuple[str, str]]) -> str:
    """``only in A (3): policy (env), …``: one run's unpaired settings, in one line."""
    names = ", ".join(f"{policy} ({env})" for env, policy in sorted(keys))
    return f"only in {side} ({len(keys)}): {names}"


def _signed(value: float, decimals: int = 3) -> str:
    """``+0.125`` (``decimals`` places, ``0`` for a rounded zero); ``—`` without pairs."""
    if np.isnan(value):
        return "—"
    text = f"{value:+.{decimals}f}"
    return "0" if float(text) == 0 else text
