"""Training the pixel-real CLIP: open_clip's own ``CLIP`` and ``ClipLoss`` on rendered data.

The recipe (recorded in ``docs/pixel_real.md``): a tiny ``open_clip.CLIP`` (ViT width
128, 4 layers, patch 16 on 96×160 frames; text width 128, 3 layers, open_clip's BPE
tokenizer), AdamW with a cosine schedule and warm-up, contrastive loss with a learned
temperature, a fixed seed and a fixed number of steps. The weights are saved in open_clip's
``local-dir`` layout in half precision (the token table dominates their size), so
:class:`~video_env.backends.openclip.OpenCLIP` loads them like any checkpoint folder.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from video_env._optional import require
from video_env.pixel.data import INPUT_SIZE

#: Image normalisation (open_clip's OpenAI mean and std), also written to the config.
MEAN = (0.48145466, 0.4578275, 0.40821073)
STD = (0.26862954, 0.26130258, 0.27577711)

#: The model: 7.9 M parameters, 6.3 M of them open_clip's 49408-token embedding table
#: (smaller than the issue's feasibility model, whose training step was too slow here).
PIXEL_CLIP_CONFIG: dict[str, object] = {
    "embed_dim": 128,
    "vision_cfg": {
        "image_size": [INPUT_SIZE.height, INPUT_SIZE.width],
        "layers": 4,
        "width": 128,
        "head_width": 32,
        "patch_size": 16,
    },
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 128, "heads": 4, "layers": 3},
}


@dataclass(frozen=True)
class Recipe:
    """Training settings (every one changes the weights)."""

    seed: int = 0
    train_videos: int = 120
    per_needle: int = 6
    steps: int = 640
    batch_size: int = 48
    lr: float = 1e-3
    weight_decay: float = 0.1
    warmup: int = 20
    threads: int = 2


def to_tensor(images: npt.NDArray[np.uint8]) -> Any:
    """``uint8[N, H, W, 3]`` to the normalised ``float32[N, 3, H, W]`` tensor the model takes."""
    torch = require("torch", "models", "pixel-real training")
    x = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float() / 255.0
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    return (x - mean) / std


def new_model(seed: int) -> Any:
    """A freshly initialised pixel-real ``open_clip.CLIP`` (seeded)."""
    torch = require("torch", "models", "pixel-real training")
    open_clip = require("open_clip", "models", "pixel-real training")
    torch.manual_seed(seed)
    return open_clip.CLIP(**PIXEL_CLIP_CONFIG)


def train_clip(
    images: npt.NDArray[np.uint8],
    captions: list[str],
    recipe: Recipe,
    progress: Callable[[str], None] = print,
) -> Any:
    """Train the pixel-real CLIP on ``images`` / ``captions``; returns the model (eval mode)."""
    torch = require("torch", "models", "pixel-real training")
    open_clip = require("open_clip", "models", "pixel-real training")
    torch.set_num_threads(recipe.threads)
    model = new_model(recipe.seed)
    tokenizer = open_clip.get_tokenizer("ViT-B-32")
    unique = sorted(set(captions))
    index = {c: i for i, c in enumerate(unique)}
    tokens = tokenizer(unique)[:, : PIXEL_CLIP_CONFIG["text_cfg"]["context_length"]]  # type: ignore[index]
    caption_ids = np.array([index[c] for c in captions])
    loss_fn = open_clip.ClipLoss()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay
    )
    cosine = open_clip_train_cosine(recipe)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, cosine)
    rng = np.random.default_rng(recipe.seed)
    model.train()
    start = time.monotonic()
    for step in range(recipe.steps):
        batch = _distinct_caption_batch(rng, caption_ids, recipe.batch_size)
        image_features, text_features, scale = model(
            to_tensor(images[batch]), tokens[caption_ids[batch]]
        )
        loss = loss_fn(image_features, text_features, scale)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        with torch.no_grad():
            model.logit_scale.clamp_(0, math.log(100))
        if step % 25 == 0 or step == recipe.steps - 1:
            progress(
                f"step {step + 1}/{recipe.steps}  loss {loss.item():.3f}  "
                f"scale {model.logit_scale.exp().item():.1f}  {time.monotonic() - start:.0f} s"
            )
    model.eval()
    return model


def open_clip_train_cosine(recipe: Recipe) -> Callable[[int], float]:
    """Linear warm-up then cosine decay to 0 (a multiplier of the base learning rate)."""

    def factor(step: int) -> float:
        if step < recipe.warmup:
            return (step + 1) / recipe.warmup
        progress = (step - recipe.warmup) / max(1, recipe.steps - recipe.warmup)
        return 0.5 * (1 + math.cos(math.pi * progress))

    return factor


def _distinct_caption_batch(
    rng: np.random.Generator, caption_ids: npt.NDArray[np.int_], size: int
) -> npt.NDArray[np.int_]:
    """Uniform sample indices, later repeats of a caption dropped (no false negatives)."""
    order = rng.permutation(len(caption_ids))[: 2 * size]
    _, first = np.unique(caption_ids[order], return_index=True)
    picks: npt.NDArray[np.int_] = order[np.sort(first)][:size]
    return picks


def save_model(model: Any, folder: Path, extra: dict[str, object]) -> Path:
    """Save ``model`` in open_clip's ``local-dir`` layout (fp16 safetensors) plus metadata."""
    safetensors_torch = require("safetensors.torch", "models", "pixel-real training")
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().half().contiguous() for k, v in model.state_dict().items()}
    safetensors_torch.save_file(state, str(folder / "open_clip_model.safetensors"))
    config = {
        "model_cfg": PIXEL_CLIP_CONFIG,
        "preprocess_cfg": {"mean": list(MEAN), "std": list(STD)},
    }
    (folder / "open_clip_config.json").write_text(
        json.dumps(config, indent=2) + "\n", encoding="utf-8"
    )
    (folder / "pixel_real.json").write_text(json.dumps(extra, indent=2) + "\n", encoding="utf-8")
    return folder


def recipe_dict(recipe: Recipe) -> dict[str, object]:
    """The recipe as JSON."""
    return asdict(recipe)
