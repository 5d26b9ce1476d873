"""The transformers VLM backend's speed paths keep its outputs (issue 72).

The vision features cache returns a fresh encode's features and a hit skips the tower;
one prompt prefilled once and decoded in several rows gives the replies of separate
calls under greedy decoding; the torch thread choice never exceeds the free cores.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from video_env.backends import torch_threads
from video_env.errors import ConfigError

# -- threads (no torch needed) -----------------------------------------------------------


def machine(monkeypatch: pytest.MonkeyPatch, cores: int, load: float) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))


@pytest.mark.parametrize("cores", [1, 2, 3, 4, 8, 16, 64])
@pytest.mark.parametrize("load", [0.0, 0.2, 0.49, 0.5, 0.9, 1.0, 1.6, 2.0, 3.7, 7.5, 100.0])
def test_the_thread_choice_never_exceeds_the_free_cores(
    monkeypatch: pytest.MonkeyPatch, cores: int, load: float
) -> None:
    machine(monkeypatch, cores, load)
    monkeypatch.delenv("VIDEO_ENV_TORCH_THREADS", raising=False)
    threads = torch_threads.choose_threads()
    free = max(0, math.floor(cores - load + 0.5))  # a core under half a job's load is free
    assert 1 <= threads <= max(1, free) and threads <= cores
    assert threads == torch_threads.choose_threads("auto")


@pytest.mark.parametrize(
    ("cores", "load", "expected"), [(2, 0.2, 2), (2, 1.0, 1), (2, 1.6, 1), (16, 9.7, 6), (4, 9, 1)]
)
def test_the_thread_choice_follows_the_load(
    monkeypatch: pytest.MonkeyPatch, cores: int, load: float, expected: int
) -> None:
    machine(monkeypatch, cores, load)
    assert torch_threads.choose_threads("auto") == expected


def test_a_count_or_the_variable_overrides_the_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    machine(monkeypatch, 2, 1.9)
    monkeypatch.setenv("VIDEO_ENV_TORCH_THREADS", "3")
    assert torch_threads.choose_threads() == 3
    assert torch_threads.choose_threads(2) == 2, "an argument wins over the variable"
    monkeypatch.setenv("VIDEO_ENV_TORCH_THREADS", "auto")
    assert torch_threads.choose_threads() == 1
    for bad in ("0", "many", "-2"):
        monkeypatch.setenv("VIDEO_ENV_TORCH_THREADS", bad)
        with pytest.raises(ConfigError):
            torch_threads.choose_threads()


# -- the model paths (tiny random Qwen2.5-VL) -------------------------------------------

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from video_env.backends.base import FrameBatch  # noqa: E402
from video_env.backends.hf_generation import (  # noqa: E402
    encode,
    generate,
    load_vlm,
    prepare_conversations,
)
from video_env.backends.transformers_vlm import TransformersVLM  # noqa: E402
from video_env.backends.vision_cache import (  # noqa: E402
    VisionFeatureCache,
    install_vision_cache,
    uninstall_vision_cache,
)
from video_env.backends.vlm_frames import FedFrames  # noqa: E402
from video_env.synth import load_suite  # noqa: E402
from video_env.types import Interval  # noqa: E402


def frames(seed: int, n: int = 4, size: tuple[int, int] = (56, 84)) -> FedFrames:
    pixels = np.random.default_rng(seed).integers(0, 256, (n, *size, 3), dtype=np.uint8)
    return FedFrames(pixels, tuple(float(i) for i in range(n)), None, 1.0)  # type: ignore[arg-type]


def model_inputs(processor: Any, *parts: FedFrames) -> Any:
    content: list[dict[str, Any]] = [
        {"type": "image" if len(p.times) == 1 else "video", "frames": p} for p in parts
    ]
    conversation = [{"role": "user", "content": [*content, {"type": "text", "text": "What?"}]}]
    texts, images, videos, metas, _ = prepare_conversations(processor, [conversation])
    return encode(processor, texts, images, videos, metas)


class TowerCalls:
    """Counts the patches the tower's own forward encodes (a hook on its patch embedding)."""

    def __init__(self, model: Any) -> None:
        self.patches = 0
        model.model.visual.patch_embed.register_forward_hook(self.hook)

    def hook(self, module: Any, args: Any, output: Any) -> None:
        self.patches += int(output.shape[0])


def test_the_vision_cache_returns_a_fresh_encodes_features_and_a_hit_skips_the_tower(
    tiny_qwen_dir: str,
) -> None:
    loaded = load_vlm(tiny_qwen_dir, "cpu", "auto", None)
    model, processor = loaded.model, loaded.processor
    inputs = model_inputs(processor, frames(0), frames(1, n=1), frames(2))
    with torch.inference_mode():
        fresh = model(**inputs).logits
    calls = TowerCalls(model)
    cache = install_vision_cache(model, VisionFeatureCache())
    assert cache is not None
    with torch.inference_mode():
        first = model(**inputs).logits
    encoded = calls.patches
    assert encoded == int(inputs["pixel_values_videos"].shape[0] + inputs["pixel_values"].shape[0])
    with torch.inference_mode():
        again = model(**inputs).logits
    assert calls.patches == encoded, "every batch was a hit: the tower did not run"
    assert torch.allclose(first, fresh, atol=1e-6) and torch.equal(again, first)
    assert cache.stats.hits == 3 and cache.stats.misses == 3
    # one batch seen, one new: only the new one is encoded, features still a fresh encode's
    mixed = model_inputs(processor, frames(0), frames(3))
    with torch.inference_mode():
        cached = model(**mixed).logits
    assert calls.patches == encoded + int(mixed["pixel_values_videos"].shape[0]) // 2
    uninstall_vision_cache(model)
    with torch.inference_mode():
        assert torch.allclose(model(**mixed).logits, cached, atol=1e-6)


def test_frozen_blocks_share_features_across_models_and_passes_with_gradients(
    tiny_qwen_dir: str,
) -> None:
    policy, reference = (load_vlm(tiny_qwen_dir, "cpu", "auto", None) for _ in range(2))
    processor = policy.processor
    inputs = model_inputs(processor, frames(5))
    with torch.inference_mode():
        fresh = reference.model(**inputs).logits
    for name, param in policy.model.model.visual.named_parameters():
        param.requires_grad_(name.startswith("merger."))  # freeze_vision: the merger trains
    reference.model.requires_grad_(False)
    cache = VisionFeatureCache()
    install_vision_cache(policy.model, cache)
    install_vision_cache(reference.model, cache)
    calls = TowerCalls(policy.model), TowerCalls(reference.model)
    with torch.inference_mode():
        reference.model(**inputs)
    logits = policy.model(**inputs).logits  # with gradients: the merger's come through
    logits.sum().backward()
    assert calls[0].patches == 0 and calls[1].patches > 0, "the policy took the reference's"
    assert torch.allclose(logits.detach(), fresh, atol=1e-6)
    assert policy.model.model.visual.merger.mlp[0].weight.grad.abs().sum() > 0
    # trainable blocks with gradients on: the tower runs (its outputs carry the graph)
    policy.model.model.visual.requires_grad_(True)
    policy.model(**inputs).logits.sum().backward()
    assert calls[0].patches > 0
    assert policy.model.model.visual.patch_embed.proj.weight.grad is not None


def test_the_cache_is_bounded_least_recent_first() -> None:
    cache = VisionFeatureCache(max_bytes=3 * 4 * 10)  # three float32 tensors of 10
    for i in range(4):
        cache.put((i,), torch.zeros(10))
        cache.get((0,))  # the first stays recent
    assert cache.get((1,)) is None and cache.get((0,)) is not None
    assert cache.stats.entries == 3 and cache.stats.bytes == 120
    with pytest.raises(ConfigError):
        VisionFeatureCache(0)


def test_a_shared_prefill_decodes_the_replies_of_separate_calls(tiny_qwen_dir: str) -> None:
    loaded = load_vlm(tiny_qwen_dir, "cpu", "auto", None)
    conversation = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What colour is the umbrella?"},
                {"type": "video", "frames": frames(7)},
                {"type": "text", "text": "Answer"},
            ],
        }
    ]
    options: dict[str, Any] = {"max_new_tokens": 10, "temperature": 0.0, "device": "cpu"}
    (alone,), _ = generate(loaded.model, loaded.processor, torch, [conversation], **options)
    rows, call = generate(
        loaded.model, loaded.processor, torch, [conversation], rows_per_prompt=3, **options
    )
    assert [r.token_ids for r in rows] == [alone.token_ids] * 3
    assert [r.text for r in rows] == [alone.text] * 3
    assert call.rows == 3 and call.prompt_tokens == (alone.prompt_tokens,) * 3
    probs = [t.chosen for t in alone.tokens]  # float noise of a batch of 3 rows
    assert [t.chosen for t in rows[2].tokens] == pytest.approx(probs, abs=1e-4)
    with pytest.raises(ConfigError):
        generate(loaded.model, loaded.processor, torch, [conversation] * 2, rows_per_prompt=2,
                 **options)  # fmt: skip


def test_the_backends_chat_n_gives_its_chats_replies_without_scores_unless_asked(
    tiny_qwen_dir: str, tmp_path: Path
) -> None:
    sample = next(s for s in load_suite("synth-tiny") if s.options)
    batch = FrameBatch.sample(sample.video, Interval(0, 60), 4, (56, 56))  # type: ignore[arg-type]
    messages: list[Any] = [{"role": "user", "content": ["Which object?", batch, "Answer."]}]
    vlm = TransformersVLM(tiny_qwen_dir, device="cpu", threads=1)
    assert vlm.threads == 1 and torch.get_num_threads() == 1
    one = vlm.chat(messages, max_new_tokens=6)
    assert one.logprobs is None and one.token_ids is not None
    assert one.completion_tokens == len(one.token_ids)
    many = vlm.chat_n(messages, 4, max_new_tokens=6, logprobs=True)
    assert [c.text for c in many] == [one.text] * 4
    assert all(c.logprobs is not None and len(c.logprobs) == c.completion_tokens for c in many)
    assert vlm.usage.vlm_calls == 5 and vlm.usage.frames == 4 * 5
    assert vlm.vision_cache is not None and vlm.vision_cache.stats.hits >= 1
    off = TransformersVLM(tiny_qwen_dir, device="cpu", vision_cache_mb=0, threads=1)
    assert off.vision_cache is None and off.chat(messages, max_new_tokens=6).text == one.text


def test_a_model_without_the_positions_hook_decodes_copies_of_the_prompt(
    tiny_qwen_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import video_env.backends.hf_shared_prefill as shared

    loaded = load_vlm(tiny_qwen_dir, "cpu", "auto", None)
    conversation = [{"role": "user", "content": [{"type": "video", "frames": frames(9)},
                                                  {"type": "text", "text": "What?"}]}]  # fmt: skip
    options: dict[str, Any] = {"max_new_tokens": 8, "temperature": 0.0, "device": "cpu"}
    (alone,), _ = generate(loaded.model, loaded.processor, torch, [conversation], **options)
    monkeypatch.setattr(shared, "_prompt_positions", lambda model, inputs: None)
    rows, call = generate(
        loaded.model, loaded.processor, torch, [conversation], rows_per_prompt=2, **options
    )
    assert [r.token_ids for r in rows] == [alone.token_ids] * 2 and call.rows == 2
