"""The generated "measured effect" blocks of docs/fidelity.md and docs/learned-pacing.md."""

import math
from pathlib import Path

import pytest

from experiments.simulator.fidelity_effect import (
    BEGIN,
    END,
    QUICK_BEGIN,
    effect_table,
    ordering,
    validation_rows,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _row(policy: str, sim: float, pix: float) -> dict[str, object]:
    measures = ("accuracy", "gtou", "vlm_calls", "model_tokens")
    values = {f"{m}_{k}": 0.0 for m in measures for k in ("simulated", "pixel")}
    return {
        "env": "zoom",
        "policy": policy,
        **values,
        "accuracy_simulated": sim,
        "accuracy_pixel": pix,
    }


def test_the_ordering_is_stated_per_perception() -> None:
    rows = [_row("falconeye[offline]", 0.86, 0.55), _row("sequential", 0.68, 0.86)]
    text = ordering(rows)
    assert "simulated: FALCONEye[offline] beats Sequential, 0.86 vs 0.68" in text
    assert "pixel-real: FALCONEye[offline] trails Sequential, 0.55 vs 0.86" in text
    assert "holds only in the simulator" in text
    both = ordering([_row("falconeye[offline]", 0.9, 0.9), _row("sequential", 0.5, 0.5)])
    assert "holds under both" in both


def test_a_policy_only_run_today_gets_its_own_line() -> None:
    table = effect_table(
        [_row("sequential", 0.68, 0.86)],
        [
            {
                "env": "clip_query",
                "policy": "uniform-8[offline]",
                "accuracy": "0.09",
                "mean_vlm_calls": "0",
            }
        ],
    )
    assert "| clip_query | uniform-8[offline] | n/a |" in table and "| 0.09 | 0.0 |" in table


def test_the_validation_table_is_read_from_the_committed_docs() -> None:
    rows = validation_rows((DOCS / "simulator.md").read_text(encoding="utf-8"))
    by = {(r["env"], r["policy"]): r for r in rows}
    assert {e for e, _ in by} == {"zoom", "clip_query"}  # pacing rows left out
    assert not math.isnan(by[("zoom", "sequential")]["accuracy_pixel"])
    with pytest.raises(ValueError, match="no simulator-validation block"):
        validation_rows("no block here")


def test_fidelity_docs_carry_the_ordering_of_the_committed_validation() -> None:
    fidelity = (DOCS / "fidelity.md").read_text(encoding="utf-8")
    block = fidelity.split(BEGIN, 1)[1].split(END, 1)[0]
    rows = validation_rows((DOCS / "simulator.md").read_text(encoding="utf-8"))
    assert ordering(rows).strip() in block
    assert QUICK_BEGIN in (DOCS / "learned-pacing.md").read_text(encoding="utf-8")
