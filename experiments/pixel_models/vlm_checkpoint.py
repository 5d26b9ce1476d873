"""The pixel VLM's architecture: a small Qwen2.5-VL with its tokenizer and processor.

The pixel VLM is a standard ``Qwen2_5_VLForConditionalGeneration`` — the 7B model's
code, at a size a 2-core CPU trains in minutes: a 4-block vision transformer (width
128, 14-pixel patches, 2×2 merge, window attention with one full-attention block) and a
3-layer language model (width 256). Its byte-level BPE vocabulary is trained on the
synthetic world's texts (prompts, questions, facts, carriers, scenes) with Qwen's special
tokens, and its processor feeds frames of at most :data:`MAX_PIXELS` (a 720p frame
becomes 504×280: 18×10 merged visual tokens per pair of frames). The saved folder holds
what a Hub checkpoint holds, so ``AutoModelForImageTextToText`` and ``AutoProcessor``
load it with no project code.
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from video_env._optional import require
from video_env.backends.testing import (
    QWEN_CHAT_TEMPLATE,
    QWEN_SPECIAL_TOKENS,
    tiny_qwen_tokenizer,
)
from video_env.backends.vlm_prompts import SYSTEM_PROMPT, caption_prompt, question_prompt
from video_env.synth.vocab import CARRIERS, FACT_POOLS, SCENE_STYLES
from video_env.types import OPTION_LETTERS

__all__ = [
    "MAX_PIXELS",
    "MIN_PIXELS",
    "NOT_VISIBLE",
    "build_processor",
    "new_model",
    "world_corpus",
]

_PURPOSE = "the pixel VLM"
#: Largest frame area the processor feeds (a 720p frame is fed at 504×280).
MAX_PIXELS = 512 * 288
#: Smallest frame area fed.
MIN_PIXELS = 28 * 28 * 4
#: The open answer the model is taught when the evidence is not in its frames.
NOT_VISIBLE = "not visible"

#: The architecture (every number changes the weights; recorded in the checkpoint).
VISION = {
    "depth": 4,
    "hidden_size": 128,
    "intermediate_size": 512,
    "num_heads": 2,
    "out_hidden_size": 256,
    "fullatt_block_indexes": [3],
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "window_size": 112,
    "tokens_per_second": 2,
}
TEXT = {
    "hidden_size": 256,
    "intermediate_size": 768,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 8192,
}
VOCAB_SIZE = 1024


def world_corpus() -> Iterator[str]:
    """Every text the pixel VLM reads or writes: prompts, questions, options, captions."""
    yield SYSTEM_PROMPT
    yield caption_prompt("light")
    yield caption_prompt("detailed")
    yield NOT_VISIBLE
    for carrier in CARRIERS:
        pool = FACT_POOLS[carrier.facts]
        question = carrier.question.format(carrier=carrier.name)
        yield question_prompt(question, list(pool[:4]))
        yield question_prompt(question)
        yield carrier.presence
        for fact in pool:
            yield carrier.template.format(fact=fact)
            yield fact
    for style in SCENE_STYLES:
        yield style.description
    yield " ".join(f"{c}. {c}" for c in OPTION_LETTERS)
    yield string.ascii_letters + string.digits + string.punctuation


def new_tokenizer() -> Any:
    """A byte-level BPE of :data:`VOCAB_SIZE` trained on :func:`world_corpus`, Qwen's tokens."""
    return tiny_qwen_tokenizer(VOCAB_SIZE, list(world_corpus()))


def build_processor(tokenizer: Any) -> Any:
    """Qwen2.5-VL's processor with the pixel VLM's budgets and the tokenizer."""
    transformers = require("transformers", "models", _PURPOSE)
    pixels = {"min_pixels": MIN_PIXELS, "max_pixels": MAX_PIXELS}
    return transformers.Qwen2_5_VLProcessor(
        image_processor=transformers.Qwen2VLImageProcessor(**pixels),
        video_processor=transformers.Qwen2VLVideoProcessor(**pixels),
        tokenizer=tokenizer,
        chat_template=QWEN_CHAT_TEMPLATE,
    )


def new_model(tokenizer: Any, seed: int) -> Any:
    """A freshly initialised pixel VLM (seeded), its generation config set for greedy replies."""
    torch = require("torch", "models", _PURPOSE)
    transformers = require("transformers", "models", _PURPOSE)
    ids = {t: int(tokenizer.convert_tokens_to_ids(t)) for t in QWEN_SPECIAL_TOKENS}
    head_dim = TEXT["hidden_size"] // TEXT["num_attention_heads"]
    half = head_dim // 2
    time_section = half // 4
    height_section = (half - time_section) // 2
    config = transformers.Qwen2_5_VLConfig(
        text_config={
            **TEXT,
            "vocab_size": len(tokenizer),
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 1000000.0,
                "mrope_section": [
                    time_section,
                    height_section,
                    half - time_section - height_section,
                ],
            },
            "bos_token_id": ids["<|endoftext|>"],
            "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"],
        },
        vision_config=dict(VISION),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = transformers.Qwen2_5_VLForConditionalGeneration(config)
    model.generation_config = transformers.GenerationConfig(
        bos_token_id=config.text_config.bos_token_id,
        eos_token_id=config.text_config.eos_token_id,
        pad_token_id=config.text_config.pad_token_id,
        do_sample=False,
    )
    return model


def parameter_count(model: Any) -> int:
    """Number of parameters."""
    return int(sum(p.numel() for p in model.parameters()))


def save_checkpoint(model: Any, processor: Any, out: Path) -> None:
    """Save model (float32) and processor as a standard transformers folder."""
    require("torch", "models", _PURPOSE)
    transformers = require("transformers", "models", _PURPOSE)
    transformers.logging.disable_progress_bar()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
