"""Tiny randomly initialised models for tests and perf scripts (no download, built in seconds).

:func:`tiny_qwen2_5_vl` saves a complete Qwen2.5-VL checkpoint (model, processor,
tokenizer, chat template) that :class:`~video_env.backends.transformers_vlm.TransformersVLM`
and ``transformers``' ``from_pretrained`` load like a real one. Its weights are random, so
its answers mean nothing; it exists to run the real inference path (pixels → processor →
vision tower → language model → token scores) offline, on a CPU, in milliseconds.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

from video_env._optional import require
from video_env.backends.random_weights import MARKER

__all__ = [
    "QWEN_CHAT_TEMPLATE",
    "QWEN_SPECIAL_TOKENS",
    "tiny_qwen2_5_vl",
    "tiny_qwen_tokenizer",
]

_PURPOSE = "the tiny Qwen2.5-VL test model"

#: Special tokens of the Qwen2/2.5-VL family, in the order the tiny vocabulary gives them ids.
QWEN_SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
)

#: A chat template with the structure of Qwen2.5-VL's own (system prompt by default,
#: ``<|im_start|>role\n...<|im_end|>`` turns, vision placeholders for image/video parts).
QWEN_CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}"
    "{% endfor %}<|im_end|>\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# A small English corpus for the byte-level BPE: words that questions, options and
# captions of the synthetic world use, so merges exist, plus every option letter.
_CORPUS = (
    "What colour is the umbrella? Which object appears in the clip? What time does the "
    "clock show? What does the sign say? Answer the following question based on the "
    "provided frames. Answer with the option's letter from the given choices directly. "
    "Provide a short description of this clip that belongs to a long video. 15 words "
    "maximum. Be confident of your description, DO NOT PROVIDE INCORRECT INFORMATION. "
    "A person walks in a red room with a blue door, a green car, a white clock and a sign. "
    "You are a helpful assistant. The answer is "
    + " ".join(f"{c}. {c}" for c in string.ascii_uppercase)
)


def tiny_qwen_tokenizer(vocab_size: int = 384, corpus: list[str] | None = None) -> Any:
    """A byte-level BPE tokenizer trained offline on a small corpus, with Qwen's special tokens.

    Args:
        vocab_size: Target vocabulary size (the 256 bytes, merges and special tokens).
        corpus: Texts to learn the merges from (default: a few sentences of the world).

    Returns:
        A ``transformers.PreTrainedTokenizerFast`` with ``<|im_end|>`` as end token and
        ``<|endoftext|>`` as padding, like Qwen2.5-VL's.
    """
    tokenizers = require("tokenizers", "models", _PURPOSE)
    transformers = require("transformers", "models", _PURPOSE)
    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(QWEN_SPECIAL_TOKENS),
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator((corpus or [_CORPUS]) * 4, trainer=trainer)
    wrapped = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=list(QWEN_SPECIAL_TOKENS[1:]),
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )
    wrapped.chat_template = QWEN_CHAT_TEMPLATE
    return wrapped


def _tiny_config(transformers: Any, tokenizer: Any, hidden: int, init_range: float) -> Any:
    ids = {t: int(tokenizer.convert_tokens_to_ids(t)) for t in QWEN_SPECIAL_TOKENS}
    heads = 2
    head_dim = hidden // heads
    return transformers.Qwen2_5_VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": hidden,
            "intermediate_size": 2 * hidden,
            "num_hidden_layers": 1,
            "num_attention_heads": heads,
            "num_key_value_heads": 1,
            "max_position_embeddings": 4096,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 1000000.0,
                # the three mRoPE sections (time, height, width) fill half the head dim
                "mrope_section": _mrope_sections(head_dim // 2),
            },
            "initializer_range": init_range,
            "bos_token_id": ids["<|endoftext|>"],
            "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"],
        },
        vision_config={
            "depth": 1,
            "hidden_size": hidden,
            "intermediate_size": 2 * hidden,
            "num_heads": heads,
            "out_hidden_size": hidden,
            "fullatt_block_indexes": [0],
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "window_size": 112,
            "tokens_per_second": 2,
            "initializer_range": init_range,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )


def _mrope_sections(half: int) -> list[int]:
    time = half // 4
    height = (half - time) // 2
    return [time, height, half - time - height]


def tiny_qwen2_5_vl(
    path: str | Path, *, hidden: int = 32, seed: int = 0, init_range: float = 1.0
) -> Path:
    """Build and save a tiny random ``Qwen2_5_VLForConditionalGeneration`` + processor.

    The directory holds what a Hub checkpoint holds (``config.json``, weights,
    ``generation_config.json``, tokenizer files, processor and video-processor configs,
    chat template), so ``TransformersVLM(model=str(path))`` and ``from_pretrained`` load
    it offline. One vision block and one decoder layer of width ``hidden``: a forward
    pass over a few 56×56 frames takes milliseconds on a CPU.

    Args:
        path: Directory to write (created if missing).
        hidden: Width of the vision tower and the language model (even, ≥ 16).
        seed: Seed of the random weights (same seed, same model).
        init_range: Standard deviation of the random weights; larger than a real
            model's 0.02 so that replies depend on the frames and token distributions
            are peaked (confidences spread over ``[0, 1]``) instead of uniform.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        BackendNotInstalled: If torch/transformers are missing (the ``models`` extra).
    """
    torch = require("torch", "models", _PURPOSE)
    transformers = require("transformers", "models", _PURPOSE)
    transformers.logging.disable_progress_bar()
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = tiny_qwen_tokenizer()
    config = _tiny_config(transformers, tokenizer, hidden, init_range)
    torch.manual_seed(seed)
    model = transformers.Qwen2_5_VLForConditionalGeneration(config).eval()
    model.generation_config = transformers.GenerationConfig(
        bos_token_id=config.text_config.bos_token_id,
        eos_token_id=config.text_config.eos_token_id,
        pad_token_id=config.text_config.pad_token_id,
        do_sample=False,
    )
    model.save_pretrained(out)
    pixels = {"min_pixels": 28 * 28, "max_pixels": 28 * 28 * 1280}
    processor = transformers.Qwen2_5_VLProcessor(
        image_processor=transformers.Qwen2VLImageProcessor(**pixels),
        video_processor=transformers.Qwen2VLVideoProcessor(**pixels),
        tokenizer=tokenizer,
        chat_template=QWEN_CHAT_TEMPLATE,
    )
    processor.save_pretrained(out)
    (out / MARKER).write_text(  # results from this folder are labelled random weights
        json.dumps({"built_by": "video_env.backends.testing.tiny_qwen2_5_vl", "seed": seed})
    )
    return out
