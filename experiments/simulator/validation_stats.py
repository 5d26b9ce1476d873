"""Statistics of the simulator-validation report: the policy table, Spearman, paired Δ."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from video_env.metrics.bootstrap import cluster_bootstrap_ci

#: Summary columns compared per (env, policy): report name -> summary.csv column.
COMPARED = {
    "accuracy": "accuracy",
    "gtou": "mean_gtou",
    "vlm_calls": "mean_vlm_calls",
    "model_tokens": "mean_model_tokens",
}


def policy_table(
    simulated: Sequence[dict[str, Any]], pixel: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One row per (env, policy) present in both runs' summaries, both values side by side.

    Keys: ``env``, ``policy``, ``episodes`` and ``<measure>_simulated`` /
    ``<measure>_pixel`` for each of :data:`COMPARED`.
    """
    by_key = {(r["env"], r["policy"]): r for r in pixel}
    table = []
    for row in simulated:
        other = by_key.get((row["env"], row["policy"]))
        if other is None:
            continue
        entry: dict[str, Any] = {
            "env": row["env"],
            "policy": row["policy"],
            "episodes": min(int(row["episodes"]), int(other["episodes"])),
        }
        for name, column in COMPARED.items():
            entry[f"{name}_simulated"] = as_number(row.get(column))
            entry[f"{name}_pixel"] = as_number(other.get(column))
        table.append(entry)
    return sorted(table, key=lambda r: (r["env"], r["policy"]))


def as_number(value: Any) -> float:
    """A table value as a float (NaN for a missing or non-numeric one)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def ranks(values: Sequence[float]) -> np.ndarray:
    """Ranks 1..n of ``values``, ties sharing their average rank."""
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    out = np.empty(len(x), dtype=np.float64)
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and x[order[j + 1]] == x[order[i]]:
            j += 1
        out[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rank correlation (Pearson's on average ranks); ``None`` if undefined.

    Undefined with fewer than 3 pairs or when one side is constant.
    """
    if len(a) != len(b):
        raise ValueError("spearman needs two sequences of the same length")
    if len(a) < 3:
        return None
    ra, rb = ranks(a) - (len(a) + 1) / 2, ranks(b) - (len(b) + 1) / 2
    denominator = math.sqrt(float((ra * ra).sum() * (rb * rb).sum()))
    if denominator == 0:
        return None
    return round(float((ra * rb).sum()) / denominator, 4)


def falconeye_vs_uniform(
    records: Sequence[dict[str, Any]],
    better: str = "falconeye",
    baseline: str = "uniform",
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Accuracy of ``better`` minus ``baseline`` on Zoom, paired by question and seed.

    The 95 % CI resamples videos (questions of one video are correlated), as
    ``video-env bench compare`` does. ``pairs`` is 0 when either policy did not run.
    """
    correct: dict[str, dict[tuple[str, int], float]] = {better: {}, baseline: {}}
    video: dict[tuple[str, int], str] = {}
    for record in records:
        env, policy, sample, _ = str(record.get("job", "|||")).split("|", 3)
        if env != "zoom" or policy not in correct or record.get("correct") is None:
            continue
        key = (sample, int(record.get("seed", 0)))
        correct[policy][key] = float(bool(record["correct"]))
        video[key] = str(record.get("video_id", sample))
    pairs = sorted(set(correct[better]) & set(correct[baseline]))
    result: dict[str, Any] = {"better": better, "baseline": baseline, "pairs": len(pairs)}
    if not pairs:
        return result
    diffs = np.array([correct[better][k] - correct[baseline][k] for k in pairs])
    low, high = cluster_bootstrap_ci(
        diffs.tolist(), [video[k] for k in pairs], samples=resamples, seed=seed
    )
    result.update(
        accuracy_better=round(float(np.mean([correct[better][k] for k in pairs])), 4),
        accuracy_baseline=round(float(np.mean([correct[baseline][k] for k in pairs])), 4),
        delta=round(float(diffs.mean()), 4),
        ci_low=round(float(low), 4),
        ci_high=round(float(high), 4),
        videos=len({video[k] for k in pairs}),
    )
    return result


def readings_summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The VLM readings of a run pooled over policies: count, accuracy, confidences, ACE.

    ``confidence_gap`` is the mean confidence of correct readings minus that of wrong
    ones: how much a confidence says about correctness. Readings are the env's grades of
    every VLM answer an episode obtained (``vlm_readings``: confidence, correct); ungraded
    ones are left out.
    """
    from video_env.metrics.calibration import ace

    pairs = [
        (float(c), bool(ok))
        for record in records
        for c, ok in record.get("vlm_readings") or []
        if ok is not None
    ]
    if not pairs:
        return {"readings": 0}
    confidences = np.array([c for c, _ in pairs])
    correct = np.array([ok for _, ok in pairs], dtype=np.float64)
    return {
        "readings": len(pairs),
        "accuracy": round(float(correct.mean()), 4),
        "mean_confidence": round(float(confidences.mean()), 4),
        "confidence_std": round(float(confidences.std()), 4),
        "above_0_9": round(float((confidences > 0.9).mean()), 4),
        "ace": round(float(ace(confidences, correct)), 4),
        "confidence_gap": round(_gap(confidences, correct), 4),
    }


def _gap(confidences: np.ndarray, correct: np.ndarray) -> float:
    """Mean confidence of correct readings minus that of wrong ones (0 if one is absent)."""
    right, wrong = confidences[correct == 1], confidences[correct == 0]
    if not len(right) or not len(wrong):
        return 0.0
    return float(right.mean() - wrong.mean())
