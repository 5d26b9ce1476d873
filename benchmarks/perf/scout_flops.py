"""The models and the FLOP bounds of ``benchmarks.perf.scout_step``.

:func:`build_model` saves a random Qwen2.5-VL of one of :data:`SIZES` (the tiny test
model's tokenizer and processor; ``realistic`` has the shipped pixel VLM's widths and
depths). Its generation never emits a special token (the end token, a vision
placeholder), so every call decodes the same number of tokens before and after, and a
sampled reply scores as text.

The bounds count multiply-adds as 2 FLOPs, from the config, for the inputs given:
weights ``2 * params * tokens`` and attention ``4 * queries * keys * width`` per layer
(causal prefill: half the keys on average), for the vision tower (patch embedding,
windowed and full-attention blocks, merger), the prefill (the language model over the
prompt, logits of its last token only) and each decoded token (its attention over the
tokens before it, the logits). A training forward pass scores the whole turn (prompt and
reply; logits of the reply only), a backward pass costs twice the forward pass of what
trains. Dividing by the machine's measured matrix-product rate gives the bound in
seconds: no implementation on this machine does the work faster.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SIZES", "Flops", "build_model", "matmul_rate"]

#: The model and the inputs of each ``--size``: frames (count, width, height), prompt
#: tokens in all, new tokens per call.
SIZES: dict[str, dict[str, Any]] = {
    "tiny": {"frames": (4, 112, 112), "prompt_tokens": 400, "new_tokens": 16,
             "text": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                      "num_attention_heads": 2, "num_key_value_heads": 1},
             "vision": {"hidden_size": 32, "intermediate_size": 64, "depth": 2,
                        "num_heads": 2, "out_hidden_size": 64, "fullatt_block_indexes": [1]}},
    "realistic": {"frames": (20, 504, 280), "prompt_tokens": 3266, "new_tokens": 59,
                  "text": {"hidden_size": 256, "intermediate_size": 768, "num_hidden_layers": 3,
                           "num_attention_heads": 4, "num_key_value_heads": 2},
                  "vision": {"hidden_size": 128, "intermediate_size": 512, "depth": 4,
                             "num_heads": 2, "out_hidden_size": 256,
                             "fullatt_block_indexes": [3]}},
}  # fmt: skip


def build_model(folder: Path, size: str) -> Path:
    """Save a random Qwen2.5-VL of ``size`` into ``folder`` (special tokens never generated)."""
    from video_env.backends.testing import QWEN_SPECIAL_TOKENS, tiny_qwen2_5_vl

    torch: Any = importlib.import_module("torch")
    transformers: Any = importlib.import_module("transformers")

    tiny_qwen2_5_vl(folder, hidden=32)  # tokenizer, processor, chat template, marker
    config = transformers.AutoConfig.from_pretrained(folder)
    spec = SIZES[size]
    for key, value in spec["text"].items():
        setattr(config.text_config, key, value)
    config.text_config.layer_types = ["full_attention"] * spec["text"]["num_hidden_layers"]
    half = spec["text"]["hidden_size"] // spec["text"]["num_attention_heads"] // 2
    time_part = half // 4
    height = (half - time_part) // 2
    config.text_config.rope_parameters["mrope_section"] = [time_part, height,
                                                           half - time_part - height]  # fmt: skip
    for key, value in spec["vision"].items():
        setattr(config.vision_config, key, value)
    config.vision_config.initializer_range = config.text_config.initializer_range = 0.02
    torch.manual_seed(0)
    model = transformers.Qwen2_5_VLForConditionalGeneration(config).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    special = [tokenizer.convert_tokens_to_ids(t) for t in QWEN_SPECIAL_TOKENS]
    model.generation_config = transformers.GenerationConfig(  # no end, no vision placeholder
        pad_token_id=config.text_config.pad_token_id, suppress_tokens=special, do_sample=False
    )
    model.save_pretrained(folder)
    return folder


def matmul_rate(torch: Any, seconds: float = 1.0) -> float:
    """FLOP/s of float32 matrix products (512 x 512 x 2048) on torch's current threads."""
    a, b = torch.randn(512, 2048), torch.randn(2048, 512)
    best, end = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        for _ in range(8):
            torch.mm(a, b)
        best = min(best, (time.perf_counter() - start) / 8)
    return 2 * 512 * 2048 * 512 / best


@dataclass(frozen=True)
class Flops:
    """FLOP counts of one model's parts, from its config."""

    config: Any

    def vision(self, grids: list[tuple[int, int, int]]) -> float:
        """The tower over frame batches of patch grids ``(t, h, w)``."""
        v = self.config.vision_config
        d, inner, unit = v.hidden_size, v.intermediate_size, v.spatial_merge_size**2
        patch = v.in_channels * v.temporal_patch_size * v.patch_size**2
        window = (v.window_size // v.patch_size) ** 2
        total = 0.0
        for t, h, w in grids:
            n = t * h * w
            total += 2 * n * patch * d  # patch embedding
            for block in range(v.depth):
                keys = h * w if block in v.fullatt_block_indexes else min(window, h * w)
                total += 2 * n * (4 * d * d + 3 * d * inner) + 4 * n * keys * d
            merged = n // unit
            total += 2 * merged * (unit * d * unit * d + unit * d * v.out_hidden_size)
        return float(total)

    def _layer_params(self) -> float:
        c = self.config.text_config
        head = c.hidden_size // c.num_attention_heads
        q = c.hidden_size * c.num_attention_heads * head
        kv = 2 * c.hidden_size * c.num_key_value_heads * head
        return float(2 * q + kv + 3 * c.hidden_size * c.intermediate_size)

    def _attention(self, queries: int, keys: float) -> float:
        c = self.config.text_config
        return float(4 * queries * keys * c.hidden_size * c.num_hidden_layers)

    def prefill(self, tokens: int) -> float:
        """The language model over a prompt of ``tokens`` (causal), logits of the last."""
        c = self.config.text_config
        weights = 2 * tokens * self._layer_params() * c.num_hidden_layers
        return float(
            weights + self._attention(tokens, tokens / 2) + 2 * c.hidden_size * c.vocab_size
        )

    def decode(self, context: int, new: int) -> float:
        """``new`` tokens decoded one by one after ``context`` tokens."""
        c = self.config.text_config
        per_token = 2 * self._layer_params() * c.num_hidden_layers + 2 * c.hidden_size * (
            c.vocab_size
        )
        return float(new * per_token + self._attention(new, context + new / 2))

    def forward(self, tokens: int, scored: int) -> float:
        """A training forward pass over ``tokens``, logits of the ``scored`` last."""
        c = self.config.text_config
        return float(self.prefill(tokens) + 2 * (scored - 1) * c.hidden_size * c.vocab_size)
