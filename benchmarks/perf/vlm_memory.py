"""GPU memory Qwen2.5-VL-7B needs for the papers' calls: weights and KV cache, computed.

Run: ``python -m benchmarks.perf.vlm_memory [--dtype-bytes 2]``

No weights are needed: the model is built on PyTorch's ``meta`` device from
Qwen/Qwen2.5-VL-7B-Instruct's published ``config.json`` values (below), so the parameter
count is exact. Prints the weights' size, the KV cache per token, and per call of the
papers' settings the visual tokens (Qwen's rule: one token per 28x28 pixels of each pair
of frames) and their KV cache. Activations (the vision tower's attention over a call's
patches, the logits) come on top and depend on the attention kernel; they are not
computed here.
"""

from __future__ import annotations

import argparse

from video_env._optional import require
from video_env.video.base import Size
from video_env.video.sampling import qwen_visual_tokens

#: Qwen/Qwen2.5-VL-7B-Instruct config.json (text and vision towers).
QWEN25_VL_7B = {
    "text_config": {
        "vocab_size": 152064,
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 1e6,
            "mrope_section": [16, 24, 24],
        },
    },
    "vision_config": {
        "depth": 32,
        "hidden_size": 1280,
        "intermediate_size": 3420,
        "num_heads": 16,
        "out_hidden_size": 3584,
        "fullatt_block_indexes": [7, 15, 23, 31],
        "window_size": 112,
    },
    "tie_word_embeddings": False,
}

#: (call, frames, size) of the papers' settings.
CALLS = (
    ("FALCONEye level-1 clip (60 s)", 30, Size(1204, 672)),
    ("FALCONEye level-3 clip (5 s)", 10, Size(1456, 812)),
    ("FALCONEye caption (60 s, 0.5 fps)", 30, Size(1204, 672)),
    ("VideoScout 1x turn", 20, Size(448, 448)),
    ("VideoScout 4x turn", 12, Size(308, 308)),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype-bytes", type=int, default=2, help="2 for bf16/fp16")
    args = parser.parse_args()
    torch = require("torch", "models", "the memory estimate")
    transformers = require("transformers", "models", "the memory estimate")
    config = transformers.Qwen2_5_VLConfig(**QWEN25_VL_7B)
    with torch.device("meta"):
        model = transformers.Qwen2_5_VLForConditionalGeneration(config)
    params = sum(p.numel() for p in model.parameters())
    vision = sum(p.numel() for p in model.model.visual.parameters())
    gib = 1024**3
    weights = params * args.dtype_bytes
    text = config.text_config
    head_dim = text.hidden_size // text.num_attention_heads
    kv_per_token = 2 * text.num_hidden_layers * text.num_key_value_heads * head_dim
    kv_per_token *= args.dtype_bytes
    print(f"Qwen2.5-VL-7B-Instruct: {params / 1e9:.2f} B parameters ({vision / 1e6:.0f} M vision)")
    print(f"weights at {args.dtype_bytes} bytes/param: {weights / gib:.1f} GiB")
    print(f"KV cache: {kv_per_token / 1024:.0f} KiB per token")
    print(f"{'call':36s} {'frames':>6s} {'size':>10s} {'visual tok':>10s} {'KV GiB':>7s}")
    for name, frames, size in CALLS:
        tokens = qwen_visual_tokens(size, frames)
        print(
            f"{name:36s} {frames:6d} {size.width:>4d}x{size.height:<5d} {tokens:10d} "
            f"{tokens * kv_per_token / gib:7.2f}"
        )
    batch = 8 * qwen_visual_tokens(CALLS[0][2], CALLS[0][1])
    print(
        f"answer_batch of 8 level-1 windows: {batch} visual tokens, "
        f"KV {batch * kv_per_token / gib:.2f} GiB"
    )


if __name__ == "__main__":
    main()
