"""``python -m experiments.pixel_models perception``: render, train, save, calibrate, evaluate."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from experiments.pixel_models.data import render_dataset
from experiments.pixel_models.train import Recipe, recipe_dict, save_model, train_clip
from video_env.pixel.splits import split_videos


def train_perception(
    recipe: Recipe, out: Path, progress: Callable[[str], None] = print
) -> dict[str, object]:
    """Render the training split, train the CLIP, save it to ``out``; returns the metadata."""
    start = time.monotonic()
    videos = split_videos("train", recipe.train_videos)
    data = render_dataset(videos, recipe.seed, recipe.per_needle)
    progress(
        f"rendered {len(data)} samples ({len(set(data.captions))} distinct captions) from "
        f"{len(videos)} training videos in {time.monotonic() - start:.0f} s"
    )
    model = train_clip(data, recipe, progress)
    meta: dict[str, object] = {
        "recipe": recipe_dict(recipe),
        "train_samples": len(data),
        "train_seconds": round(time.monotonic() - start, 1),
        "temperature": 1.0,
    }
    save_model(model, out, meta)
    progress(f"saved to {out} ({sum(p.stat().st_size for p in out.iterdir()) / 1e6:.1f} MB)")
    return meta


def update_meta(out: Path, **fields: object) -> dict[str, object]:
    """Merge ``fields`` into ``out/pixel_real.json``."""
    path = out / "pixel_real.json"
    meta: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    meta.update(fields)
    path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta
