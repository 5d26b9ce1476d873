"""The held-out evaluation table of the pixel-real weights, as Markdown for the docs.

Run: ``python -m experiments.pixel_models.pixel_real_table [--weights DIR] [--update-docs]``

Reads the evaluation that ``python -m experiments.pixel_models perception`` (or
``--evaluate-only``) stored in
the weights' ``pixel_real.json`` and prints it as the table of ``docs/pixel_real.md``;
``--update-docs`` replaces the block between ``<!-- pixel-real-table -->`` and
``<!-- /pixel-real-table -->`` there. ``tests/pixel/test_pixel_real.py`` checks that the docs'
block is the table of the shipped weights.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from experiments._docs import update_block
from experiments.pixel_models.evaluate import INTERVAL_CONDITIONS
from video_env.pixel import WEIGHTS_DIR

BEGIN = "<!-- pixel-real-table -->"
END = "<!-- /pixel-real-table -->"
CATEGORIES = ("colour", "material", "object", "text", "time")


def _row(label: str, cells: dict[str, float]) -> str:
    return (
        f"| {label} | " + " | ".join(f"{cells.get(c, float('nan')):.2f}" for c in CATEGORIES) + " |"
    )


def _interval_row(label: str, cells: dict[str, list[float]]) -> str:
    return (
        f"| {label} | "
        + " | ".join(
            f"{cells[c][0]:.2f}–{cells[c][1]:.2f}" if c in cells else "" for c in CATEGORIES
        )
        + " |"
    )


def _counts(counts: dict[str, int]) -> str:
    """``"72–96 MCQs"`` (the smallest and largest cell's count)."""
    low, high = min(counts.values()), max(counts.values())
    return f"{low} MCQs" if low == high else f"{low}–{high} MCQs"


def _margin(value: object) -> str:
    return "none" if value is None else f"{float(value):.2f}"  # type: ignore[arg-type]


def markdown_table(meta: dict[str, object]) -> str:
    """The table (Markdown, ending in a newline) of a ``pixel_real.json``'s evaluation."""
    table: dict[str, object] = meta["evaluation"]  # type: ignore[assignment]
    retrieval: dict[str, dict[str, float]] = table["retrieval_recall_at_1"]  # type: ignore[assignment]
    mcq: dict[str, dict[str, float]] = table["mcq"]  # type: ignore[assignment]
    views: dict[str, dict[str, float]] = table.get("single_view_mcq", {})  # type: ignore[assignment]
    needles: dict[str, int] = table.get("test_needles", {})  # type: ignore[assignment]
    lines = [
        "| held-out measure | " + " | ".join(CATEGORIES) + " |",
        "|---|" + "---|" * len(CATEGORIES),
        "| needles (each cell's sample) | "
        + " | ".join(str(needles.get(c, "")) for c in CATEGORIES)
        + " |",
    ]
    names = {
        "question": "the question",
        "carrier": "the carrier",
        "statement": "the fact statement",
    }
    lines += [
        _row(f"retrieval R@1, query = {names[k]}", retrieval[k]) for k in names if k in retrieval
    ]
    conditions = {
        "720p": "MCQ accuracy, 4 frames at 720p inside the needle",
        "448p": "MCQ accuracy, 4 frames at 448×252 inside the needle",
        "none": "MCQ accuracy, no evidence (chance 0.25)",
        "other": "MCQ accuracy, another needle's window (chance 0.25)",
    }
    intervals: dict[str, dict[str, list[float]]] = table.get("mcq_interval", {})  # type: ignore[assignment]
    counts: dict[str, dict[str, int]] = table.get("mcq_count", {})  # type: ignore[assignment]
    for k, label in conditions.items():
        if k not in mcq:
            continue
        lines.append(_row(label, mcq[k]))
        if k in INTERVAL_CONDITIONS and k in intervals:
            lines.append(
                _interval_row(f"… 95 % interval over videos ({_counts(counts[k])})", intervals[k])
            )
    lines.append(_row("open accuracy (name the fact), 720p", table["open_720p"]))  # type: ignore[arg-type]
    view_names = {
        "crop": "MCQ accuracy, one crop centred on the needle",
        "tile": "MCQ accuracy, the one 720p 3-row tile holding the needle",
        "crop_carrier": "carrier named (of 25 carriers), one crop",
        "tile_carrier": "carrier named (of 25 carriers), the one 720p 3-row tile",
    }
    lines += [_row(label, views[k]) for k, label in view_names.items() if k in views]
    lines.append("")
    lines.append(
        f"Prior weight {float(meta.get('prior_weight', 0.0)):.2f}, not-in-view margin "  # type: ignore[arg-type]
        f"{_margin(meta.get('null_margin'))} and temperature "
        f"{float(meta['temperature']):.2f} (fitted on the calib split); test MCQ confidence "  # type: ignore[arg-type]
        f"ACE (10 bins) {float(table['ace']):.3f} over {table['n_mcq']} MCQs of "  # type: ignore[arg-type]
        f"{table['test_videos']} videos."
    )
    guessed: dict[str, dict[str, list[object]]] = table.get("most_guessed", {})  # type: ignore[assignment]
    if "none" in guessed:
        lines.append("")
        lines.append(
            "Most guessed fact without evidence (share of the guesses; share of the MCQs "
            "offering it whose truth it is, 0.25 expected): "
            + "; ".join(
                f"{category} {fact} ({float(share):.2f}; {float(truth):.2f})"  # type: ignore[arg-type]
                for category, (fact, share, truth) in guessed["none"].items()
                if category in CATEGORIES[:3]
            )
            + "."
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table; with ``--update-docs`` write it into ``docs/pixel_real.md``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", type=Path, default=WEIGHTS_DIR)
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args(argv)
    meta = json.loads((args.weights / "pixel_real.json").read_text(encoding="utf-8"))
    block = markdown_table(meta)
    print(block, end="")
    if args.update_docs:
        print(f"updated {update_block(BEGIN, END, block)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
