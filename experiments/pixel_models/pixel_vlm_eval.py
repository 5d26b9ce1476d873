"""The pixel VLM on held-out test videos: MCQ, open answers, Eq. 1 confidence, captions, speed.

``python -m experiments.pixel_models.pixel_vlm_eval [--model FOLDER] [--videos 24]`` loads the
checkpoint through the library's own :class:`~video_env.backends.transformers_vlm.TransformersVLM`
(the path Qwen2.5-VL-7B takes) and measures, on the pixel-real harness's held-out test
split (:func:`video_env.pixel.splits.split_videos`, ``"test"``; the same windows as
:mod:`experiments.pixel_models.evaluate`):

- MCQ accuracy per kind from 4 frames inside the needle at 1280×720 (``720p``), from a
  needle-free window (``none``) and from another needle's window (``other``) — chance
  is 0.25 without the evidence — with 95 % intervals clustered by video;
- open-answer accuracy (exact match, the benches' default judge) with the evidence;
- FALCONEye's Eq. 1 confidence of the MCQ replies (the option letter's probability):
  ACE over all MCQs, mean confidence of right and wrong replies, and how often 0.9 and
  0.8 are exceeded by each;
- whether the light caption of the evidence window names the carrier;
- the seconds of one level-1 FALCONEye evaluation (30 frames of a 60 s clip, 720p).

Results are the tiny trained model's (labelled ``pixel-vlm``): real inference on
rendered pixels, not simulated, and not a real benchmark model's.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments._docs import update_block
from experiments.pixel_models.data import needle_kind
from experiments.pixel_models.evaluate import N_FRAMES, condition_window
from video_env.backends.base import FrameBatch
from video_env.metrics.answers import mcq_correct
from video_env.metrics.bootstrap import cluster_bootstrap_ci
from video_env.metrics.calibration import ace
from video_env.metrics.judges import exact_match
from video_env.pixel.splits import split_videos
from video_env.synth.questions import needle_sample
from video_env.synth.world import SynthVideo
from video_env.types import Interval
from video_env.video.base import Size

__all__ = ["evaluate", "format_report", "main"]

#: Markers of the generated block in docs/pixel_vlm.md.
BEGIN = "<!-- pixel-vlm-eval -->"
END = "<!-- /pixel-vlm-eval -->"

FRAME_SIZE = Size(1280, 720)
#: Pixels of one merged visual token's side at the fed size (14-px patches, 2×2 merge).
MERGED_CELL = 28
#: Windows per needle without the evidence (each another window).
NO_EVIDENCE_DRAWS = 2
READ_KINDS = ("colour", "material", "object")


def names_carrier(caption: str, carrier: str) -> bool:
    """Whether ``caption`` names ``carrier`` (its head noun, e.g. "umbrella" of "the umbrella")."""
    words = caption.lower().replace(";", " ").replace(",", " ").split()
    return carrier.lower().split()[-1] in words


def evaluate(vlm: Any, videos: Sequence[SynthVideo]) -> list[dict[str, Any]]:
    """One row per (needle, task, condition) on ``videos``."""
    rows: list[dict[str, Any]] = []
    for video in videos:
        for needle in video.needles:
            kind = needle_kind(needle)
            mcq = needle_sample(video, needle, "mcq")
            assert mcq.options is not None
            for condition in ("720p", "none", "other"):
                for draw in range(NO_EVIDENCE_DRAWS if condition != "720p" else 1):
                    window = condition_window(video, needle, condition, draw)
                    frames = FrameBatch.sample(video, window, N_FRAMES, FRAME_SIZE)
                    reply = vlm.answer(frames, mcq.question, mcq.options)
                    rows.append(
                        {
                            "video": video.id,
                            "kind": kind,
                            "task": "mcq",
                            "condition": condition,
                            "correct": mcq_correct(reply.text, mcq),
                            "confidence": float(reply.confidence),
                            "reply": reply.text,
                        }
                    )
            window = condition_window(video, needle, "720p")
            frames = FrameBatch.sample(video, window, N_FRAMES, FRAME_SIZE)
            reply = vlm.answer(frames, mcq.question)
            rows.append(
                {
                    "video": video.id,
                    "kind": kind,
                    "task": "open",
                    "condition": "720p",
                    "correct": exact_match(needle.fact, reply.text),
                    "reply": reply.text,
                }
            )
            caption = vlm.caption(frames)
            rows.append(
                {
                    "video": video.id,
                    "kind": kind,
                    "task": "caption",
                    "condition": "720p",
                    "correct": names_carrier(caption, needle.carrier),
                    "reply": caption,
                }
            )
        video.close()
    return rows


def level1_seconds(vlm: Any, video: SynthVideo, repeats: int = 3) -> float:
    """Median seconds of one FALCONEye level-1 evaluation: 30 frames of 60 s at 720p."""
    times = []
    for k in range(repeats):
        frames = FrameBatch.sample(video, Interval(60.0 * k, 60.0 * (k + 1)), 30, FRAME_SIZE)
        frames.pixels()  # decoding is the env's cost, not the model's
        start = time.perf_counter()
        vlm.answer(frames, video.needles[0].question, ["red", "blue", "green", "white"])
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def needle_footprints(videos: Sequence[SynthVideo], fed: Size) -> dict[str, Any]:
    """How many merged visual tokens the read needles cover in a frame fed at ``fed``.

    The area of each colour / material / object needle's drawn box at its midpoint, in
    units of one merged token (28×28 fed pixels): the quartiles, and the share covering
    at most one and at most two tokens.
    """
    areas = []
    for video in videos:
        for needle in video.needles:
            if needle_kind(needle) not in READ_KINDS:
                continue
            t = (needle.start + needle.end) / 2
            for shown, (x0, y0, x1, y1) in video.needle_boxes(t, fed):
                if shown is needle:
                    areas.append((x1 - x0) * (y1 - y0) / MERGED_CELL**2)
    values = np.array(areas)
    q1, median, q3 = (float(v) for v in np.quantile(values, [0.25, 0.5, 0.75]))
    return {
        "needles": len(values),
        "quartiles": [round(q1, 2), round(median, 2), round(q3, 2)],
        "at_most_1": round(float((values <= 1).mean()), 3),
        "at_most_2": round(float((values <= 2).mean()), 3),
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Accuracies with clustered 95 % intervals, calibration and caption rates."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["task"], row["condition"], row["kind"])].append(row)
        if row["kind"] in READ_KINDS:
            groups[(row["task"], row["condition"], "read")].append(row)
    table: dict[str, Any] = {}
    for (task, condition, kind), members in sorted(groups.items()):
        values = [float(r["correct"]) for r in members]
        low, high = cluster_bootstrap_ci(values, [r["video"] for r in members])
        table[f"{task}/{condition}/{kind}"] = {
            "n": len(values),
            "accuracy": round(float(np.mean(values)), 3),
            "ci": [round(low, 3), round(high, 3)],
        }
    mcq = [r for r in rows if r["task"] == "mcq" and r["kind"] in READ_KINDS]
    conf = np.array([r["confidence"] for r in mcq])
    right = np.array([bool(r["correct"]) for r in mcq])
    calibration = {
        "n": len(mcq),
        "ace": round(ace(conf, right), 3),
        "mean_right": round(float(conf[right].mean()), 3) if right.any() else None,
        "mean_wrong": round(float(conf[~right].mean()), 3) if (~right).any() else None,
    }
    for threshold in (0.9, 0.8):
        for name, mask in (("right", right), ("wrong", ~right)):
            share = float((conf[mask] > threshold).mean()) if mask.any() else None
            calibration[f"above_{threshold}_{name}"] = None if share is None else round(share, 3)
    return {"table": table, "calibration": calibration}


def format_report(summary: dict[str, Any]) -> list[str]:
    """Markdown lines of the report."""
    lines = [
        "| task | condition | kind | n | accuracy | 95 % CI |",
        "|---|---|---|---:|---:|---|",
    ]
    for key, cell in summary["table"].items():
        task, condition, kind = key.split("/")
        low, high = cell["ci"]
        lines.append(
            f"| {task} | {condition} | {kind} | {cell['n']} | {cell['accuracy']:.3f} | "
            f"{low:.3f}–{high:.3f} |"
        )
    cal = summary["calibration"]
    lines += [
        "",
        f"Eq. 1 confidence over {cal['n']} MCQs of colour/material/object (all conditions): "
        f"ACE {cal['ace']:.3f}; mean {cal['mean_right']} right vs {cal['mean_wrong']} wrong; "
        f"> 0.9: {cal['above_0.9_right']} of right, {cal['above_0.9_wrong']} of wrong; "
        f"> 0.8: {cal['above_0.8_right']} of right, {cal['above_0.8_wrong']} of wrong.",
    ]
    if "footprint" in summary:
        foot = summary["footprint"]
        q1, median, q3 = foot["quartiles"]
        lines.append(
            f"Needle footprint at the fed size ({foot['needles']} colour/material/object "
            f"needles): median {median} merged tokens (quartiles {q1}–{q3}); "
            f"{foot['at_most_1']:.2f} cover at most one token, {foot['at_most_2']:.2f} at most two."
        )
    if "level1_seconds" in summary:
        lines.append(
            f"One level-1 FALCONEye evaluation (30 frames, 720p, fed at "
            f"{summary['fed_size']}): {summary['level1_seconds']:.2f} s (median of 3)."
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    from video_env.backends.transformers_vlm import TransformersVLM
    from video_env.pixel import PIXEL_VLM_DIR

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(PIXEL_VLM_DIR), help="checkpoint folder")
    parser.add_argument("--videos", type=int, default=24, help="test-split videos")
    parser.add_argument("--out", default="runs/pixel-vlm-eval", help="results folder")
    parser.add_argument(
        "--update-docs",
        action="store_true",
        help="rewrite the marked block of docs/pixel_vlm.md (and the checkpoint's evaluation)",
    )
    args = parser.parse_args(argv)
    vlm = TransformersVLM(args.model, device="cpu")
    start = time.monotonic()
    videos = split_videos("test", args.videos)
    rows = evaluate(vlm, videos)
    summary = summarise(rows)
    summary["level1_seconds"] = round(level1_seconds(vlm, videos[0]), 3)
    fed = vlm.last_call.frames[0][1] if vlm.last_call else None
    summary["fed_size"] = f"{fed.width}×{fed.height}" if fed else "?"
    if fed:
        summary["footprint"] = needle_footprints(videos, fed)
    summary["model"] = args.model
    summary["seconds"] = round(time.monotonic() - start, 1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", "utf-8")
    command = "python -m experiments.pixel_models.pixel_vlm_eval" + (
        "" if args.model == str(PIXEL_VLM_DIR) else f" --model {args.model}"
    )
    block = "\n".join(
        [
            f"Generated by `{command}` ({args.videos} held-out test videos, "
            f"{summary['seconds']:.0f} s on this machine); chance is 0.25 for MCQs.",
            "",
            *format_report(summary),
            "",
        ]
    )
    print(block)
    print(f"(rows and summary in {out})")
    if args.update_docs:
        update_block(BEGIN, END, block)
        record_evaluation(Path(args.model), rows)
        print("updated docs/pixel_vlm.md")
    return 0


def record_evaluation(folder: Path, rows: list[dict[str, Any]]) -> None:
    """Write the MCQ calibration (ACE, reliability bins) into the checkpoint's provenance."""
    from video_env.metrics.calibration import reliability_bins
    from video_env.pixel import PIXEL_VLM_MARKER

    path = folder / PIXEL_VLM_MARKER
    meta = json.loads(path.read_text(encoding="utf-8"))
    mcq = [r for r in rows if r["task"] == "mcq" and r["kind"] in READ_KINDS]
    conf = [r["confidence"] for r in mcq]
    right = [bool(r["correct"]) for r in mcq]
    meta["evaluation"] = {
        "ace": round(ace(conf, right), 4),
        "reliability": [
            [round(b.mean_conf, 4), round(b.accuracy, 4), b.count]
            for b in reliability_bins(conf, right)
            if b.count
        ],
    }
    path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
