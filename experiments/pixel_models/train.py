"""Training the pixel-real CLIP: open_clip's own ``CLIP`` and ``ClipLoss`` on rendered data.

The recipe (recorded in ``docs/pixel_real.md``): a tiny ``open_clip.CLIP`` (a timm
``test_resnet`` image tower on 96×160 frames, mean- and max-pooled; text width 128, 3 layers,
open_clip's BPE tokenizer), AdamW with a cosine schedule and warm-up, a fixed seed and a
fixed number of steps. The loss (``Recipe.loss``):

- ``"multi"`` (default): contrast against a per-batch *text bank* — every scene
  description and every carrier's presence phrase, name and question, plus per carrier in
  the batch statements of other facts of its pool (hard negatives). Image→text is a
  cross-entropy per kind of text (the fact statements, the carrier phrases, the scenes),
  each against the image's true texts of that kind, so telling a red umbrella from a blue
  one weighs as much as finding the umbrella; text→image is a cross-entropy over the
  batch's images each bank text is true of (multi-positive, no false negatives).
- ``"clip"``: open_clip's own ``ClipLoss`` on (image, caption) pairs of a batch with
  distinct captions (the first recipe).

The weights are saved in open_clip's ``local-dir`` layout in half precision (the token
table dominates their size), so :class:`~video_env.backends.openclip.OpenCLIP` loads them
like any checkpoint folder.
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

from experiments.pixel_models.data import RenderedSet
from video_env._optional import require
from video_env.errors import ConfigError
from video_env.pixel.splits import READ_CATEGORIES
from video_env.pixel.tiles import INPUT_SIZE
from video_env.synth.vocab import CARRIERS, FACT_POOLS, SCENE_STYLES

#: Image normalisation (open_clip's OpenAI mean and std), also written to the config.
MEAN = (0.48145466, 0.4578275, 0.40821073)
STD = (0.26862954, 0.26130258, 0.27577711)

#: The model: a tiny ResNet image tower (timm's ``test_resnet``: 0.4 M parameters, one block
#: per stage, pooled by the average of mean and max pooling of its last feature map, so that
#: a small object anywhere in the frame still shows) and a 3-layer text tower whose 49408-token
#: table (open_clip's BPE vocabulary) holds most of the 7.3 M parameters. A ViT of the same
#: cost (width 128, 4 layers, patch 16) learned colours but not which object it saw in the
#: same training budget (docs/pixel_real.md); the convolutions' locality does that at once.
PIXEL_CLIP_CONFIG: dict[str, object] = {
    "embed_dim": 128,
    "vision_cfg": {
        "image_size": [INPUT_SIZE.height, INPUT_SIZE.width],
        "timm_model_name": "test_resnet",
        "timm_pool": "avgmax",
        "timm_proj": "linear",
    },
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 128, "heads": 4, "layers": 3},
}


@dataclass(frozen=True)
class Recipe:
    """Training settings (every one changes the weights).

    ``threads`` is 2 by default (reproducible bit for bit for a given count); pass 1 on a
    shared machine (see ``docs/architecture.md``). ``loss`` is ``"multi"`` or
    ``"clip"`` (module docstring); ``hard_negatives`` is the number of other facts of a
    carrier's pool put in the text bank for each of its images.
    """

    seed: int = 0
    train_videos: int = 160
    per_needle: int = 6
    steps: int = 3000
    batch_size: int = 64
    lr: float = 2e-3
    weight_decay: float = 0.1
    warmup: int = 20
    threads: int = 2
    loss: str = "multi"
    hard_negatives: int = 8


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


def train_clip(data: RenderedSet, recipe: Recipe, progress: Callable[[str], None] = print) -> Any:
    """Train the pixel-real CLIP on rendered ``data``; returns the model (eval mode).

    Raises:
        ConfigError: If ``recipe.loss`` is not a known loss.
    """
    torch = require("torch", "models", "pixel-real training")
    if recipe.loss not in ("multi", "clip"):
        raise ConfigError(f"unknown pixel-real loss {recipe.loss!r}; use 'multi' or 'clip'")
    torch.set_num_threads(recipe.threads)
    model = new_model(recipe.seed)
    batches = TextBank(data, recipe) if recipe.loss == "multi" else CaptionPairs(data, recipe)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, open_clip_train_cosine(recipe))
    model.train()
    start = time.monotonic()
    for step in range(recipe.steps):
        loss = batches.loss(model, step)
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


def tokenize(texts: list[str]) -> Any:
    """open_clip's BPE tokens of ``texts``, cut to the model's context length."""
    open_clip = require("open_clip", "models", "pixel-real training")
    context: int = PIXEL_CLIP_CONFIG["text_cfg"]["context_length"]  # type: ignore[index]
    return open_clip.get_tokenizer("ViT-B-32")(texts)[:, :context]


class CaptionPairs:
    """The ``"clip"`` loss: open_clip's ``ClipLoss`` over distinct-caption batches."""

    def __init__(self, data: RenderedSet, recipe: Recipe) -> None:
        open_clip = require("open_clip", "models", "pixel-real training")
        self.images = data.images
        unique = sorted(set(data.captions))
        index = {c: i for i, c in enumerate(unique)}
        self.tokens = tokenize(unique)
        self.caption_ids = np.array([index[c] for c in data.captions])
        self.loss_fn = open_clip.ClipLoss()
        self.batch_size = recipe.batch_size
        self.rng = np.random.default_rng(recipe.seed)

    def loss(self, model: Any, step: int) -> Any:
        """The loss of the next batch."""
        batch = _distinct_caption_batch(self.rng, self.caption_ids, self.batch_size)
        image_features, text_features, scale = model(
            to_tensor(self.images[batch]), self.tokens[self.caption_ids[batch]]
        )
        return self.loss_fn(image_features, text_features, scale)


class TextBank:
    """The ``"multi"`` loss: multi-positive contrast against a per-batch text bank."""

    def __init__(self, data: RenderedSet, recipe: Recipe) -> None:
        self.images = data.images
        self.positives = data.positives
        self.batch_size = recipe.batch_size
        self.hard_negatives = recipe.hard_negatives
        self.rng = np.random.default_rng(recipe.seed)
        self.carriers = {c.name: c for c in CARRIERS}
        scenes = [s.description for s in SCENE_STYLES]
        phrases = [
            t for c in CARRIERS for t in (c.presence, c.name, c.question.format(carrier=c.name))
        ]
        statements = [
            c.template.format(fact=f)
            for c in CARRIERS
            if c.category in READ_CATEGORIES
            for f in FACT_POOLS[c.facts]
        ]
        kinds = {
            **dict.fromkeys(statements, 0),
            **dict.fromkeys(phrases, 1),
            **dict.fromkeys(scenes, 2),
        }
        self.texts = sorted(kinds)
        self.index = {t: i for i, t in enumerate(self.texts)}
        self.kind = np.array([kinds[t] for t in self.texts])
        self.always = [self.index[t] for t in scenes + phrases]
        self.tokens = tokenize(self.texts)

    def bank(self, batch: npt.NDArray[np.int_]) -> tuple[list[int], npt.NDArray[np.bool_]]:
        """Text indices of the batch's bank and the ``[batch, bank]`` truth matrix."""
        chosen = set(self.always)
        for i in batch:
            positives = self.positives[i]
            chosen |= {self.index[t] for t in positives if t}
            carrier = self.carriers.get(positives[2]) if len(positives) > 2 else None
            if carrier is not None and carrier.category in READ_CATEGORIES:
                pool = FACT_POOLS[carrier.facts]
                picks = self.rng.choice(
                    len(pool), min(self.hard_negatives, len(pool)), replace=False
                )
                chosen |= {self.index[carrier.template.format(fact=pool[k])] for k in picks}
        columns = sorted(chosen)
        where = {t: j for j, t in enumerate(columns)}
        truth = np.zeros((len(batch), len(columns)), bool)
        for row, i in enumerate(batch):
            truth[row, [where[self.index[t]] for t in self.positives[i] if t]] = True
        return columns, truth

    def loss(self, model: Any, step: int) -> Any:
        """The loss of the next batch: image→text per kind of text, plus text→image."""
        torch = require("torch", "models", "pixel-real training")
        batch = self.rng.choice(len(self.images), self.batch_size, replace=False)
        columns, truth = self.bank(batch)
        image_features = model.encode_image(to_tensor(self.images[batch]), normalize=True)
        text_features = model.encode_text(self.tokens[columns], normalize=True)
        logits = model.logit_scale.exp() * image_features @ text_features.T
        target = torch.from_numpy(truth).float()
        kind = torch.from_numpy(self.kind[columns])
        image_to_text = []
        for k in range(3):
            cols = kind == k
            rows = target[:, cols].sum(1) > 0
            image_to_text.append(
                soft_cross_entropy(logits[rows][:, cols], target[rows][:, cols], 1)
            )
        matched = target.sum(0) > 0
        text_to_image = soft_cross_entropy(logits[:, matched], target[:, matched], 0)
        return sum(image_to_text) / 3 + text_to_image


def soft_cross_entropy(logits: Any, target: Any, dim: int) -> Any:
    """Mean cross-entropy of ``softmax(logits)`` along ``dim`` against a soft target.

    The target is ``target`` made uniform over its true entries (every slice along
    ``dim`` has at least one): a multi-positive cross-entropy.
    """
    torch = require("torch", "models", "pixel-real training")
    weights = target / target.sum(dim, keepdim=True)
    return -(weights * torch.log_softmax(logits, dim)).sum(dim).mean()


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
