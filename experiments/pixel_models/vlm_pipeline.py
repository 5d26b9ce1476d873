"""``python -m experiments.pixel_models vlm``: render, train both stages, save a checkpoint.

The folder written is a standard Qwen2.5-VL checkpoint (``config.json``,
``model.safetensors``, tokenizer, processor and video-processor configs, chat template)
plus ``pixel_vlm.json``: the recipe, the data digest, the training time, the machine
and the command — what makes the shipped weights reproducible and labels its results.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from experiments.pixel_models.vlm_binding import init_match_head
from experiments.pixel_models.vlm_checkpoint import (
    build_processor,
    new_model,
    new_tokenizer,
    parameter_count,
    save_checkpoint,
)
from experiments.pixel_models.vlm_data import FrameBank, bank_of
from experiments.pixel_models.vlm_train import (
    VLMRecipe,
    align_carrier_words,
    align_fact_words,
    recipe_dict,
    train_language,
    train_vision,
)
from policies.videoscout.record import save_trained_rules
from video_env._optional import require
from video_env.envs.pacing_rules import pixel_vlm_rules
from video_env.pixel import PIXEL_VLM_MARKER
from video_env.pixel.splits import split_videos
from video_env.run_record import command_line, machine

__all__ = ["MARKER", "train_pixel_vlm"]

MARKER = PIXEL_VLM_MARKER


def bank_digest(bank: FrameBank) -> str:
    """A short hash of the training frames and their labels."""
    digest = hashlib.sha256()
    for pixels, carrier, fact in zip(bank.pixels, bank.carrier, bank.fact, strict=True):
        digest.update(pixels.tobytes())
        digest.update(carrier.tobytes())
        digest.update(fact.tobytes())
    return digest.hexdigest()[:16]


def load_checkpoint(folder: Path) -> tuple[Any, Any]:
    """A saved pixel VLM and its processor (float32, training mode off; local files only)."""
    from video_env.backends.hf_generation import load_vlm

    loaded = load_vlm(str(folder), "cpu", "float32", None)
    return loaded.model, loaded.processor


def train_pixel_vlm(
    recipe: VLMRecipe,
    out: Path,
    progress: Callable[[str], None] = print,
    start_from: Path | None = None,
) -> dict[str, Any]:
    """Render the training split, train both stages, save the checkpoint to ``out``.

    With ``start_from`` (a pixel VLM folder), stage 1 is skipped: that checkpoint's
    model continues stage 2 for ``recipe.language_steps`` steps, and its provenance is
    kept under ``continued_from``.
    """
    start = time.monotonic()
    bank = bank_of(split_videos("train", recipe.train_videos), recipe.seed)
    check = (
        bank_of(split_videos("calib", recipe.check_videos), recipe.seed + 1)
        if recipe.check_videos
        else None
    )
    rendered = time.monotonic() - start
    progress(
        f"rendered {len(bank)} frames of {recipe.train_videos} training videos ({rendered:.0f} s)"
    )
    previous: dict[str, Any] | None = None
    if start_from is None:
        tokenizer = new_tokenizer()
        processor = build_processor(tokenizer)
        model = new_model(tokenizer, recipe.seed)
        progress(f"pixel VLM: {parameter_count(model) / 1e6:.2f} M parameters")
        heads = train_vision(model, processor, bank, recipe, progress, check)
        carriers = align_carrier_words(model, processor, heads) if recipe.align_carriers else 0
        aligned = align_fact_words(model, processor, heads)
        if recipe.binding > 0:
            init_match_head(require("torch", "models", "the pixel VLM"), model, recipe.seed)
    else:
        model, processor = load_checkpoint(start_from)
        previous = json.loads((start_from / MARKER).read_text(encoding="utf-8"))
        aligned = int(previous.get("aligned_fact_tokens", 0))
        carriers = int(previous.get("aligned_carrier_tokens", 0))
        progress(f"continuing stage 2 from {start_from}")
    vision_seconds = time.monotonic() - start - rendered
    train_language(model, processor, bank, recipe, progress, check)
    meta: dict[str, Any] = {
        "model": "the pixel VLM: a tiny Qwen2.5-VL trained on the synthetic world's pixels",
        "recipe": recipe_dict(recipe),
        "parameters": parameter_count(model),
        "train_frames": len(bank),
        "data_digest": bank_digest(bank),
        "aligned_fact_tokens": aligned,
        "aligned_carrier_tokens": carriers,
        "seconds": {
            "render": round(rendered, 1),
            "vision": round(vision_seconds, 1),
            "total": round(time.monotonic() - start, 1),
        },
        "machine": machine(),
        "command": command_line(),
    }
    if previous is not None:
        meta["continued_from"] = previous
    save_checkpoint(model, processor, out)
    (out / MARKER).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    save_trained_rules(out, pixel_vlm_rules())  # VideoScout runs it on the frames it knows
    size = sum(p.stat().st_size for p in out.iterdir()) / 1e6
    progress(f"saved to {out} ({size:.1f} MB, {meta['seconds']['total']:.0f} s in all)")
    return meta
