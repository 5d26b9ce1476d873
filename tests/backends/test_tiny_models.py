"""The tiny random checkpoints that stand in for real weights in tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")


def test_tiny_qwen_loads_like_a_hub_checkpoint_and_generates(tiny_qwen_dir: str) -> None:
    processor = transformers.AutoProcessor.from_pretrained(tiny_qwen_dir)
    model = transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(tiny_qwen_dir).eval()
    assert model.config.model_type == "qwen2_5_vl"
    messages = [{"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "video"}]}]
    prompt = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert prompt.startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n")
    assert "<|vision_start|><|video_pad|><|vision_end|>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    video = np.zeros((2, 56, 84, 3), dtype=np.uint8)
    inputs = processor(
        text=[prompt], videos=[video], do_resize=False, do_sample_frames=False, return_tensors="pt"
    )
    # 2 frames of 56x84 = one temporal patch of (56/28) x (84/28) merged tokens
    assert int((inputs["input_ids"] == processor.video_token_id).sum()) == 2 * 3
    with torch.inference_mode():
        out = model.generate(**inputs, max_new_tokens=3, do_sample=False)
    assert 1 <= out.shape[1] - inputs["input_ids"].shape[1] <= 3


def test_tiny_qwen_tokenizer_has_letters_and_qwen_special_tokens(tiny_qwen_dir: str) -> None:
    tok = transformers.AutoTokenizer.from_pretrained(tiny_qwen_dir)
    assert tok.eos_token == "<|im_end|>"
    for letter in "ABCDEFGH":  # option letters are single tokens, as in Qwen's vocabulary
        assert tok.convert_ids_to_tokens(tok(letter)["input_ids"]) == [letter]
    assert tok.decode(tok("What colour is it?")["input_ids"]) == "What colour is it?"
    meta = json.loads((Path(tiny_qwen_dir) / "tiny_model.json").read_text())
    assert meta["built_by"].endswith("tiny_qwen2_5_vl")
