"""A tiny random open_clip model for tests (no download): ``tiny_open_clip(path)``.

The lead folds this into ``video_env.backends.testing`` (beside ``tiny_qwen2_5_vl``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from video_env._optional import require
from video_env.backends.random_weights import MARKER

#: A CLIP with one-layer 32-wide towers on 32×32 images (~1.7 M parameters, mostly the
#: token embedding of open_clip's 49408-token BPE vocabulary, which ships with open_clip).
TINY_OPEN_CLIP_CONFIG: dict[str, object] = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 8},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


def tiny_open_clip(path: str | os.PathLike[str], seed: int = 0) -> Path:
    """Build a tiny random ``open_clip.CLIP`` and save it where :class:`OpenCLIP` loads it.

    The folder holds ``open_clip_config.json`` (model and preprocessing config) and
    ``open_clip_model.safetensors``: open_clip's ``local-dir:`` layout, so
    ``OpenCLIP(str(path))`` and the spec ``open_clip:PATH`` load it.

    Args:
        path: Output folder (created).
        seed: Seed of the random weights.

    Returns:
        The folder.
    """
    torch = require("torch", "models", "tiny test models")
    open_clip = require("open_clip", "models", "tiny test models")
    safetensors_torch = require("safetensors.torch", "models", "tiny test models")
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = open_clip.CLIP(**TINY_OPEN_CLIP_CONFIG)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    safetensors_torch.save_file(state, str(folder / "open_clip_model.safetensors"))
    config = {
        "model_cfg": TINY_OPEN_CLIP_CONFIG,
        "preprocess_cfg": {
            "mean": [0.48145466, 0.4578275, 0.40821073],
            "std": [0.26862954, 0.26130258, 0.27577711],
        },
    }
    (folder / "open_clip_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    built = {"built_by": "video_env.backends.testing_clip.tiny_open_clip", "seed": seed}
    (folder / MARKER).write_text(json.dumps(built), encoding="utf-8")  # random weights
    return folder
