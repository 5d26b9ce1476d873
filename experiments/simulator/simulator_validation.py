"""Simulator validation: do policies rank the same under simulated and pixel-real perception?

Run: ``python -m experiments.simulator.simulator_validation [--perception pixel-real|pixel-vlm]
[--weights DIR] [--out DIR] [--update-docs]`` (``pixel-vlm``: the second bench's VLM and
captioner are the pixel VLM, and ``--update-docs`` writes ``docs/pixel_vlm.md``).

1. Two ``video-env bench`` runs (:func:`benchmarks.run.run_benchmark`, resumable folders
   ``OUT/simulated`` and ``OUT/pixel-real``) of the same policies on the same questions
   (``synth-quick``'s visual and object needles by default), one with the SIMULATED
   perception, one with the pixel-real models of ``--weights`` (default: the shipped ones).
2. Per (env, policy): accuracy, GToU, VLM calls and model tokens under both; the Spearman
   rank correlation of the accuracies (target >= 0.8); FALCONEye against uniform sampling
   under pixel-real perception (paired by question, bootstrap CI over videos).
3. The zoom-in effect from pixels (:mod:`experiments.simulator.zoom_effect`): the pixel-real VLM's
   accuracy against window length and frame width, beside the simulator's expected curve.
4. ``OUT/validation.json``, ``OUT/validation.md`` (the markdown block between
   :data:`BEGIN` and :data:`END`, also printed) and ``OUT/simulator_validation.png``;
   ``--update-docs`` replaces the block in ``docs/simulator.md`` and copies the figure to
   ``docs/simulator_validation.png``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.config import ENV_KINDS, BenchConfig
from benchmarks.doc_blocks import replace_block
from benchmarks.run import run_benchmark
from experiments.simulator.validation_stats import (
    falconeye_vs_uniform,
    policy_table,
    readings_summary,
    spearman,
)
from experiments.simulator.zoom_effect import needle_mcqs, resolution_curve, window_curve

#: Markers of the generated block in docs/simulator.md.
BEGIN = "<!-- simulator-validation -->"
END = "<!-- /simulator-validation -->"
DOCS = Path(__file__).resolve().parents[2] / "docs"
FIGURE = "simulator_validation.png"
#: Per perception: the docs page holding the block, and the figure's name.
DOCS_PAGES = {
    "pixel-real": ("simulator.md", FIGURE),
    "pixel-vlm": ("pixel_vlm.md", "simulator_validation_pixel_vlm.png"),
}


def configs(
    weights: str | None,
    suite: str,
    categories: Sequence[str],
    envs: Sequence[str],
    policies: Sequence[str],
    seeds: Sequence[int],
    perception: str = "pixel-real",
) -> dict[str, BenchConfig]:
    """The two bench configs: ``simulated`` and ``perception`` (on ``weights``).

    ``perception`` is ``pixel-real`` (the tiny CLIP in every role; ``weights`` its
    folder) or ``pixel-vlm`` (the pixel VLM answers and captions, ``weights`` its
    checkpoint folder; the pixel-real CLIP retrieves).
    """
    common: dict[str, Any] = {
        "suite": suite,
        "categories": tuple(categories),
        "envs": tuple(envs),
        "policies": tuple(policies),
        "seeds": tuple(seeds),
    }
    pixel: dict[str, Any] = {"perception": perception}
    if weights is not None:
        spec = f"{perception}:{Path(weights).resolve()}"
        pixel.update(vlm=spec, captioner=spec)
        if perception == "pixel-real":
            pixel.update(clip=spec)
    return {
        "simulated": BenchConfig(**common),
        perception: BenchConfig(**common, **pixel),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run both benches and the zoom study; returns the report (see the module docstring)."""
    from video_env.envs.perception import Perception

    out = Path(args.out)
    results: dict[str, Any] = {}
    walls: dict[str, float] = {}
    perception = args.perception
    for name, config in configs(
        args.weights, args.suite, args.categories, args.envs, args.policies, args.seeds, perception
    ).items():
        start = time.monotonic()
        print(f"== bench: {name} perception -> {out / name}", flush=True)
        results[name] = run_benchmark(
            config,
            out / name,
            executor=args.executor,
            workers=args.workers,
            plots=False,
            fresh=args.fresh,
        )
        walls[name] = round(time.monotonic() - start, 1)
        print(f"   {len(results[name].records)} episodes ({walls[name]} s)", flush=True)
    sim, pix = results["simulated"], results[perception]
    table = policy_table(sim.rows, pix.rows)
    rho = spearman([r["accuracy_simulated"] for r in table], [r["accuracy_pixel"] for r in table])
    versus = falconeye_vs_uniform(pix.records)
    versus_sequential = falconeye_vs_uniform(pix.records, baseline="sequential")
    start = time.monotonic()
    from video_env.synth import load_suite

    zoom_samples = needle_mcqs(load_suite(args.zoom_suite), args.categories)[: args.zoom_limit]
    world = Perception.pixel_vlm if perception == "pixel-vlm" else Perception.pixel_real
    vlm = world(args.weights).vlm
    assert vlm is not None
    windows = window_curve(zoom_samples, vlm)
    widths = resolution_curve(zoom_samples, vlm)
    walls["zoom_study"] = round(time.monotonic() - start, 1)
    return {
        "command": "python -m experiments.simulator.simulator_validation "
        + " ".join(shlex.quote(a) for a in sys.argv[1:] if a != "--update-docs"),
        "perception": perception,
        "weights": _weights_info(args.weights, perception),
        "suite": args.suite,
        "categories": list(args.categories),
        "questions": len({r["sample_id"] for r in pix.records}),
        "policies": table,
        "spearman": rho,
        "falconeye_vs_uniform": versus,
        "falconeye_vs_sequential": versus_sequential,
        "readings": {
            "simulated": readings_summary(sim.records),
            perception: readings_summary(pix.records),
        },
        "zoom_suite": args.zoom_suite,
        "zoom_questions": len(zoom_samples),
        "window_curve": [p.to_dict() for p in windows],
        "resolution_curve": [p.to_dict() for p in widths],
        "wall_s": walls,
    }


def _weights_info(weights: str | None, perception: str = "pixel-real") -> dict[str, Any]:
    from video_env.pixel import PIXEL_VLM_DIR, PIXEL_VLM_MARKER, WEIGHTS_DIR

    if perception == "pixel-vlm":
        folder = Path(weights) if weights else PIXEL_VLM_DIR
        path = folder / PIXEL_VLM_MARKER
        meta = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        recipe = meta.get("recipe", {})
        evaluation = meta.get("evaluation", {})
        return {
            "folder": "shipped (video_env/pixel/vlm_weights)" if weights is None else str(folder),
            "parameters": meta.get("parameters"),
            "steps": sum(
                recipe.get(key) or 0 for key in ("vision_steps", "binding_steps", "language_steps")
            )
            - (recipe.get("binding_steps") or 0) * (recipe.get("binding", 0) <= 0),
            "ace": evaluation.get("ace"),
            "reliability": evaluation.get("reliability", []),
        }

    folder = Path(weights) if weights else WEIGHTS_DIR
    meta_path = folder / "pixel_real.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
    recipe = meta.get("recipe", {})
    return {
        "folder": "shipped (video_env/pixel/weights)" if weights is None else str(folder),
        "steps": recipe.get("steps"),
        "batch_size": recipe.get("batch_size"),
        "temperature": meta.get("temperature"),
        "prior_weight": meta.get("prior_weight", 0.0),
        "null_margin": meta.get("null_margin"),
        "ace": meta.get("evaluation", {}).get("ace"),
        "reliability": meta.get("evaluation", {}).get("reliability", []),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m experiments.simulator.simulator_validation",
        description=__doc__.split("\n")[0],
    )
    parser.add_argument(
        "--perception",
        default="pixel-real",
        choices=["pixel-real", "pixel-vlm"],
        help="the perception compared with the simulator (default pixel-real)",
    )
    parser.add_argument(
        "--weights", help="pixel-real weights or pixel VLM folder (default: the shipped)"
    )
    parser.add_argument(
        "--out", help="results folder (default: runs/simulator-validation[-pixel-vlm])"
    )
    parser.add_argument("--suite", default="synth-quick")
    parser.add_argument("--categories", nargs="+", default=["visual", "object"])
    parser.add_argument("--envs", nargs="+", default=list(ENV_KINDS), choices=ENV_KINDS)
    parser.add_argument("--policies", nargs="+", default=["all"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--workers", type=int, default=2, help="bench processes (default 2)")
    parser.add_argument("--executor", default=None, help="bench executor (default: process)")
    parser.add_argument("--zoom-suite", default="synth-quick", help="needles of the zoom study")
    parser.add_argument("--zoom-limit", type=int, default=None, help="at most N zoom questions")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="start both benches over (default: resume OUT's folders when the set-up is the same)",
    )
    parser.add_argument(
        "--update-docs",
        action="store_true",
        help=f"rewrite the marked block of docs/simulator.md and docs/{FIGURE}",
    )
    args = parser.parse_args(argv)
    args.executor = args.executor or ("process" if args.workers > 1 else "serial")
    if args.out is None:
        suffix = "-pixel-vlm" if args.perception == "pixel-vlm" else ""
        args.out = f"runs/simulator-validation{suffix}"
    report = run(args)
    out = Path(args.out)
    from experiments.simulator.validation_report import markdown, plot

    picture = DOCS_PAGES[args.perception][1]
    figure = plot(out / picture, report)
    block = markdown(report, picture)
    (out / "validation.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out / "validation.md").write_text(f"{BEGIN}\n{block}{END}\n", encoding="utf-8")
    print(f"{BEGIN}\n{block}{END}")
    if args.update_docs:
        page, picture = DOCS_PAGES[args.perception]
        update_docs(DOCS / page, block)
        shutil.copyfile(figure, DOCS / picture)
        print(f"updated docs/{page} and docs/{picture}")
    return 0


def update_docs(path: Path, block: str) -> None:
    """Replace the text between :data:`BEGIN` and :data:`END` in ``path`` by ``block``."""
    replace_block(path, BEGIN, END, block)


if __name__ == "__main__":
    raise SystemExit(main())
