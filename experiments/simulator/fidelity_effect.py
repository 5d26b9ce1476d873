"""The "measured effect" blocks of ``docs/fidelity.md`` and ``docs/learned-pacing.md``.

Run: ``python -m experiments.simulator.fidelity_effect [--out DIR] [--fresh] [--run-pixel-real]
[--update-docs]``

1. The Zoom and ClipQuery policies (the papers' agents and baselines, offline reasoners)
   on the questions of the simulator validation (``synth-quick``'s visual and object
   needles) under SIMULATED and pixel-real perception: accuracy, GToU and VLM calls side
   by side, and FALCONEye against Sequential under each perception. By default both
   columns are read from the simulator validation's committed output (the generated block
   of ``docs/simulator.md``, :data:`experiments.simulator.simulator_validation.BEGIN`: a pixel-real
   bench of every policy takes over ten minutes here), and today's code is run with
   SIMULATED perception on the same questions (``OUT/simulated``) beside it.
   ``--run-pixel-real`` runs the pixel-real bench too (``OUT/pixel-real``, slow) and uses
   it instead. The pixel-real VLM is the tiny CLIP-based one (``docs/pixel_real.md``);
   the generative pixel VLM (``docs/pixel_vlm.md``) is not part of this study.
2. FALCONEye's offline reasoner on the whole of ``synth-quick`` (48 questions, seed 0,
   simulated, ``OUT/falconeye-quick``): the row ``docs/learned-pacing.md`` compares the
   learned pacing policy with.

``--update-docs`` replaces the blocks between ``<!-- fidelity-effect -->`` /
``<!-- /fidelity-effect -->`` in ``docs/fidelity.md`` and ``<!-- falconeye-quick -->`` /
``<!-- /falconeye-quick -->`` in ``docs/learned-pacing.md``.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.config import BenchConfig
from benchmarks.run import run_benchmark
from experiments._docs import update_block
from experiments.simulator.simulator_validation import BEGIN as VALIDATION_BEGIN
from experiments.simulator.simulator_validation import END as VALIDATION_END
from experiments.simulator.simulator_validation import configs
from experiments.simulator.validation_stats import COMPARED, as_number, policy_table

DOCS = Path(__file__).resolve().parents[2] / "docs"
BEGIN, END = "<!-- fidelity-effect -->", "<!-- /fidelity-effect -->"
QUICK_BEGIN, QUICK_END = "<!-- falconeye-quick -->", "<!-- /falconeye-quick -->"
#: The Zoom and ClipQuery policies the fidelity table covers (offline reasoners).
POLICIES = (
    "falconeye",
    "falconeye-flash",
    "sequential",
    "sequential-bp",
    "iterative-sampling",
    "socratic",
    "socratic-short",
    "uniform",
    "videoagent",
    "uniform-8",
    "random",
)
COMMAND = (
    "python -m experiments.simulator.fidelity_effect "
    "--out runs/fidelity-effect --fresh --update-docs"
)
#: Column names of the validation table, per measure of :data:`COMPARED`.
_VALIDATION_COLUMNS = {
    "accuracy": ("accuracy sim", "accuracy pixel-real"),
    "gtou": ("GToU sim", "GToU pixel-real"),
    "vlm_calls": ("VLM calls sim", "VLM calls pixel-real"),
    "model_tokens": ("model tokens sim", "model tokens pixel-real"),
}


def validation_rows(
    markdown: str, envs: Sequence[str] = ("zoom", "clip_query")
) -> list[dict[str, Any]]:
    """The simulator validation's policy table, as :func:`policy_table` rows.

    Args:
        markdown: A text holding the validation block (``docs/simulator.md``).
        envs: Environments to keep.

    Raises:
        ValueError: If the block or its table is missing.
    """
    if VALIDATION_BEGIN not in markdown or VALIDATION_END not in markdown:
        raise ValueError("no simulator-validation block")
    block = markdown.split(VALIDATION_BEGIN, 1)[1].split(VALIDATION_END, 1)[0]
    lines = [ln for ln in block.splitlines() if ln.startswith("| ")]
    if not lines or not lines[0].startswith("| env | policy"):
        raise ValueError("the simulator-validation block has no policy table")
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[1:]:
        cells = dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=False))
        if cells.get("env") not in envs:  # separators, and the zoom tables after it
            continue
        row: dict[str, Any] = {"env": cells["env"], "policy": cells["policy"]}
        for name in COMPARED:
            sim, pix = _VALIDATION_COLUMNS[name]
            row[f"{name}_simulated"] = _number(cells[sim])
            row[f"{name}_pixel"] = _number(cells[pix])
        rows.append(row)
    if not rows:
        raise ValueError("the simulator-validation table has no zoom or clip_query row")
    return rows


def _number(text: str) -> float:
    """A table cell as a float (thousands separators allowed; NaN if not a number)."""
    return as_number(text.replace(",", ""))


def _f(value: float, digits: int = 2) -> str:
    return "n/a" if math.isnan(value) else f"{value:.{digits}f}"


def effect_table(
    rows: Sequence[dict[str, Any]], today: Sequence[dict[str, Any]] | None = None
) -> str:
    """The per-perception table (Markdown) from :func:`policy_table` rows.

    ``today``: summary rows of today's simulated run, added as two columns (accuracy,
    VLM calls); a policy missing from ``rows`` gets its own line with only those.
    """
    now = {(r["env"], r["policy"]): r for r in today or ()}
    extra = " accuracy simulated, today | VLM calls simulated, today |" if today else ""
    lines = [
        "| env | policy | accuracy simulated | accuracy pixel-real | GToU simulated | "
        "GToU pixel-real | VLM calls simulated | VLM calls pixel-real |" + extra,
        "|---|---|---|---|---|---|---|---|" + ("---|---|" if today else ""),
    ]
    blank = {f"{m}_{k}": math.nan for m in COMPARED for k in ("simulated", "pixel")}
    known = {(r["env"], r["policy"]) for r in rows}
    everything = [*rows, *({"env": e, "policy": p, **blank} for e, p in now if (e, p) not in known)]
    for r in sorted(everything, key=lambda r: (r["env"] != "zoom", r["env"], r["policy"])):
        line = (
            f"| {r['env']} | {r['policy']} | {_f(r['accuracy_simulated'])} | "
            f"{_f(r['accuracy_pixel'])} | {_f(r['gtou_simulated'])} | {_f(r['gtou_pixel'])} | "
            f"{_f(r['vlm_calls_simulated'], 1)} | {_f(r['vlm_calls_pixel'], 1)} |"
        )
        if today:
            t = now.get((r["env"], r["policy"]), {})
            line += (
                f" {_f(as_number(t.get('accuracy')))} | "
                f"{_f(as_number(t.get('mean_vlm_calls')), 1)} |"
            )
        lines.append(line)
    return "\n".join(lines) + "\n"


def _row(rows: Sequence[dict[str, Any]], policy: str) -> dict[str, Any] | None:
    return next((r for r in rows if r["env"] == "zoom" and r["policy"] == policy), None)


def ordering(rows: Sequence[dict[str, Any]]) -> str:
    """Whether FALCONEye[offline] beats Sequential, under each perception (a sentence)."""
    fe, sq = _row(rows, "falconeye[offline]"), _row(rows, "sequential")
    if fe is None or sq is None:
        return ""
    parts = []
    for key, label in (("simulated", "simulated"), ("pixel", "pixel-real")):
        a, b = fe[f"accuracy_{key}"], sq[f"accuracy_{key}"]
        verb = "beats" if a > b else "trails" if a < b else "ties with"
        parts.append(f"{label}: FALCONEye[offline] {verb} Sequential, {a:.2f} vs {b:.2f}")
    holds = [
        label
        for key, label in (("simulated", "the simulator"), ("pixel", "pixel-real perception"))
        if fe[f"accuracy_{key}"] > sq[f"accuracy_{key}"]
    ]
    verdict = (
        "the ordering FALCONEye > Sequential holds under both"
        if len(holds) == 2
        else f"the ordering FALCONEye > Sequential holds only in {holds[0]}"
        if holds
        else "the ordering FALCONEye > Sequential holds under neither"
    )
    return "; ".join(parts) + f" — {verdict}.\n"


def fidelity_block(
    rows: Sequence[dict[str, Any]],
    questions: int,
    walls: dict[str, float],
    today: Sequence[dict[str, Any]] | None = None,
) -> str:
    """The block of ``docs/fidelity.md`` (``today``: the committed-validation mode)."""
    timing = ", ".join(f"{k} {v:.0f} s" for k, v in walls.items())
    source = (
        "the *simulated* and *pixel-real* columns are the simulator validation's committed "
        "output (the generated table of `docs/simulator.md`, made by `python -m "
        "experiments.simulator.simulator_validation` on the code before issue 26; not re-run "
        "here: it "
        "takes over ten minutes), the *today* columns this command's simulated run of "
        "today's code on the same questions"
        if today
        else "both perceptions run by this command (`--run-pixel-real`)"
    )
    return (
        f"Generated by `{COMMAND}` ({questions} visual and object questions of `synth-quick`, "
        f"seed 0, the simulator validation's questions; offline reasoners, no LLM): {source}. "
        "Pixel-real: the shipped tiny models, whose VLM is CLIP-based; the generative pixel "
        f"VLM (docs/pixel_vlm.md) has no column here. Wall times here: {timing}.\n\n"
        + effect_table(rows, today)
        + "\n"
        + ordering(rows)
    )


def quick_block(row: dict[str, Any], command: str) -> str:
    """The FALCONEye row of ``docs/learned-pacing.md``."""
    return (
        f"Generated by `{command}` (the `falconeye[offline]` row of `OUT/falconeye-quick`, "
        "48 questions, seed 0, simulated, today's code):\n\n"
        "| env | policy | mean reward | accuracy (95 % CI) | mean GToU | VLM calls | frames | "
        "turns |\n|---|---|---|---|---|---|---|---|\n"
        f"| zoom | {row['policy']} | {float(row['mean_reward']):.3f} | "
        f"{float(row['accuracy']):.3f} ({float(row['acc_ci_low']):.3f}–"
        f"{float(row['acc_ci_high']):.3f}) | {float(row['mean_gtou']):.3f} | "
        f"{float(row['mean_vlm_calls']):.1f} | {float(row['mean_frames']):.1f} | "
        f"{float(row['mean_turns']):.1f} |\n"
    )


def run(args: argparse.Namespace) -> tuple[str, str]:
    """Run the benches; returns the two blocks."""
    out = Path(args.out)
    results: dict[str, Any] = {}
    walls: dict[str, float] = {}
    pair = configs(None, "synth-quick", ["visual", "object"], ["zoom", "clip_query"],
                   list(POLICIES), [0])  # fmt: skip
    if not args.run_pixel_real:
        del pair["pixel-real"]
    quick = BenchConfig(suite="synth-quick", envs=("zoom",), policies=("falconeye",))
    for name, config in {**pair, "falconeye-quick": quick}.items():
        start = time.monotonic()
        print(f"== bench: {name} -> {out / name}", flush=True)
        results[name] = run_benchmark(
            config, out / name, executor=args.executor, workers=args.workers, plots=False,
            fresh=args.fresh,
        )  # fmt: skip
        walls[name] = time.monotonic() - start
    questions = len({r["sample_id"] for r in results["simulated"].records})
    fe = next(r for r in results["falconeye-quick"].rows if r["policy"] == "falconeye[offline]")
    quick_text = quick_block(fe, COMMAND)
    if args.run_pixel_real:
        table = policy_table(results["simulated"].rows, results["pixel-real"].rows)
        return fidelity_block(table, questions, walls), quick_text
    committed = validation_rows((DOCS / "simulator.md").read_text(encoding="utf-8"))
    today = [dict(r) for r in results["simulated"].rows]
    return fidelity_block(committed, questions, walls, today), quick_text


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m experiments.simulator.fidelity_effect", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", default="runs/fidelity-effect", help="results folder")
    parser.add_argument("--workers", type=int, default=1, help="bench processes (default 1)")
    parser.add_argument("--executor", default=None, help="bench executor (default: serial)")
    parser.add_argument("--fresh", action="store_true", help="start the benches over")
    parser.add_argument(
        "--run-pixel-real",
        action="store_true",
        help="run the pixel-real bench too (slow) instead of reading docs/simulator.md's",
    )
    parser.add_argument("--update-docs", action="store_true", help="rewrite the docs' blocks")
    args = parser.parse_args(argv)
    args.executor = args.executor or ("process" if args.workers > 1 else "serial")
    block, quick = run(args)
    print(f"{BEGIN}\n{block}{END}\n{QUICK_BEGIN}\n{quick}{QUICK_END}")
    if args.update_docs:
        print(f"updated {update_block(BEGIN, END, block)}")
        print(f"updated {update_block(QUICK_BEGIN, QUICK_END, quick)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
