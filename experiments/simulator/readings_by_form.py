"""A bench run's VLM readings and accuracy split by question form (MCQ / open).

The simulator validation pools every reading; this splits them, to tell an informative
confidence from confident abstentions ("not visible" on a clip without the evidence)::

    python -m experiments.simulator.readings_by_form runs/simulator-validation-pixel-vlm/pixel-vlm
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def form_of(record: dict[str, Any]) -> str:
    """The question form of an episode record (its sample id ends with it)."""
    return str(record["sample_id"]).rsplit("/", 1)[-1]


def readings_by_form(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per form: readings, their accuracy, mean confidence right / wrong, share above 0.9."""
    out: dict[str, dict[str, float]] = {}
    forms = sorted({form_of(r) for r in records})
    for form in forms:
        pairs = [
            (float(c), bool(ok))
            for r in records
            if form_of(r) == form
            for c, ok in r.get("vlm_readings") or []
            if ok is not None
        ]
        if not pairs:
            continue
        conf = np.array([c for c, _ in pairs])
        right = np.array([ok for _, ok in pairs])
        out[form] = {
            "readings": len(pairs),
            "accuracy": float(right.mean()),
            "confidence_right": float(conf[right].mean()) if right.any() else float("nan"),
            "confidence_wrong": float(conf[~right].mean()) if (~right).any() else float("nan"),
            "above_0_9_right": float((conf[right] > 0.9).mean()) if right.any() else float("nan"),
            "above_0_9_wrong": float((conf[~right] > 0.9).mean())
            if (~right).any()
            else float("nan"),
        }
    return out


def accuracy_by_policy_and_form(records: Sequence[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """Episode accuracy per (policy, form)."""
    hits: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in records:
        hits[(str(r.get("policy")), form_of(r))].append(bool(r["correct"]))
    return {key: float(np.mean(v)) for key, v in sorted(hits.items())}


def main(argv: Sequence[str] | None = None) -> int:
    """Print both tables for a run folder (its ``episodes.jsonl``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a bench output folder")
    args = parser.parse_args(argv)
    lines = (args.run / "episodes.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    print("| form | readings | accuracy | conf. right | conf. wrong | > 0.9 right | > 0.9 wrong |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for form, s in readings_by_form(records).items():
        print(
            f"| {form} | {s['readings']:.0f} | {s['accuracy']:.2f} | {s['confidence_right']:.2f}"
            f" | {s['confidence_wrong']:.2f} | {s['above_0_9_right']:.2f}"
            f" | {s['above_0_9_wrong']:.2f} |"
        )
    print("\n| policy | form | accuracy |\n|---|---|---:|")
    for (policy, form), acc in accuracy_by_policy_and_form(records).items():
        print(f"| {policy} | {form} | {acc:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
