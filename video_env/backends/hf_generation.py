"""Loading a transformers chat VLM offline-first, and one batched ``generate`` (scores if asked).

The per-token probabilities follow FALCONEye's reference (``qwen2_5_vl.inference``):
``generate(..., return_dict_in_generate=True, output_scores=True)``, a softmax of each
step's scores, every generated token decoded on its own with special tokens kept. They
are computed only when asked for (``scores=True``: confidences, log-probabilities); a
plain chat call keeps the token ids alone. In a batch, each row's tokens end at its first
end token (included); padding after it is dropped. ``rows_per_prompt`` decodes several
replies to one prompt prefilled once (:mod:`video_env.backends.hf_shared_prefill`).
"""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from video_env._optional import require
from video_env.backends.base import ReplyGuide
from video_env.backends.confidence import TokenProb
from video_env.backends.model_paths import looks_like_path, missing_model_path
from video_env.backends.vlm_frames import FedFrames
from video_env.errors import BackendError, ConfigError
from video_env.video.base import Size

__all__ = ["Generated", "LoadedVLM", "VisionCall", "generate", "load_vlm", "resolve_device"]

_PURPOSE = "the transformers VLM backend (Qwen2.5-VL)"


@dataclass(frozen=True)
class LoadedVLM:
    """A loaded model and processor, with the dtype and revision actually used."""

    model: Any
    processor: Any
    dtype: str
    revision: str | None


@dataclass(frozen=True)
class Generated:
    """One row of a batched generation.

    Attributes:
        text: The reply, special tokens skipped.
        tokens: Each generated token with its probabilities (end token included);
            empty when the call asked for no scores.
        prompt_tokens: Prompt tokens, visual placeholders included.
        n_visual_tokens: Visual tokens in the prompt.
        finish_reason: ``"stop"`` (end token) or ``"length"`` (token cap).
        token_ids: The generated token ids (end token included), as sampled; ``None``
            where a row was built without them.
    """

    text: str
    tokens: tuple[TokenProb, ...]
    prompt_tokens: int
    n_visual_tokens: int
    finish_reason: str
    token_ids: tuple[int, ...] | None = None


@dataclass(frozen=True)
class VisionCall:
    """What the last forward pass was fed (for the record and for tests).

    Attributes:
        frames: Per frame batch, in prompt order: ``(timestamps, fed size, kind)`` with
            kind ``"video"`` or ``"image"``.
        rows: Conversations in the batch.
        visual_tokens: Visual tokens per row.
        prompt_tokens: Prompt tokens per row.
    """

    frames: tuple[tuple[tuple[float, ...], Size, str], ...]
    rows: int
    visual_tokens: tuple[int, ...]
    prompt_tokens: tuple[int, ...]


def resolve_device(torch: Any, device: str) -> str:
    """``"auto"`` as CUDA when available, else the CPU; any other device as given."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def load_vlm(model_id: str, device: str, dtype: str, attn: str | None) -> LoadedVLM:
    """Load a chat VLM and its processor from local files only (never a download).

    Raises:
        BackendError: If the weights are not local, or the checkpoint cannot be loaded.
        ConfigError: On an unknown dtype.
    """
    if missing_model_path(model_id):  # a path is never handed to the Hub as a repo id
        raise BackendError(f"no model directory at {model_id!r}")
    torch = require("torch", "models", _PURPOSE)
    transformers = require("transformers", "models", _PURPOSE)
    transformers.logging.disable_progress_bar()
    kwargs: dict[str, Any] = {"dtype": _torch_dtype(torch, dtype, device)}
    if attn is not None:
        kwargs["attn_implementation"] = attn
    try:
        model, processor = _from_pretrained(transformers, model_id, kwargs)
    except OSError as exc:
        raise BackendError(_missing_message(model_id, exc)) from None
    except ValueError as exc:
        raise BackendError(f"cannot load {model_id!r} as a chat VLM: {exc}") from None
    model = model.to(device).eval()
    tokenizer = processor.tokenizer
    tokenizer.padding_side = "left"  # batched generation appends on the right
    revision = getattr(model.config, "_commit_hash", None) or folder_revision(model_id)
    return LoadedVLM(model, processor, str(model.dtype).removeprefix("torch."), revision)


#: Weight folders up to this size are identified by their bytes, larger ones by their files.
CONTENT_HASH_LIMIT = 256 * 2**20
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


def folder_revision(model_id: str) -> str | None:
    """A revision for a local checkpoint folder (a Hub snapshot has its commit hash).

    Without it the caches would key a folder's answers by its path alone, and a model
    retrained into the same folder (the pixel VLM's training writes the shipped one) would be
    served its predecessor's answers. Small folders are identified by the bytes of their
    weight and config files; large ones (a 7B model) by each file's name, size and
    modification time — a rewritten file is a new revision either way. ``None`` for a
    model id that is not a local folder.
    """
    folder = Path(model_id)
    if not folder.is_dir():
        return None
    files = sorted(
        p for p in folder.iterdir() if p.suffix in _WEIGHT_SUFFIXES or p.name == "config.json"
    )
    digest = hashlib.sha256()
    by_content = sum(p.stat().st_size for p in files) <= CONTENT_HASH_LIMIT
    for path in files:
        digest.update(path.name.encode())
        if by_content:
            digest.update(path.read_bytes())
        else:
            stat = path.stat()
            digest.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
    return f"{'content' if by_content else 'files'}-{digest.hexdigest()[:16]}"


def _from_pretrained(transformers: Any, model_id: str, kwargs: dict[str, Any]) -> tuple[Any, Any]:
    processor = transformers.AutoProcessor.from_pretrained(model_id, local_files_only=True)
    model = transformers.AutoModelForImageTextToText.from_pretrained(
        model_id, local_files_only=True, **kwargs
    )
    return model, processor


def _missing_message(model_id: str, exc: BaseException) -> str:
    if Path(os.path.expanduser(model_id)).is_dir():
        return f"cannot load the checkpoint in {model_id!r}: {exc}"
    if looks_like_path(model_id):
        return f"no model directory at {model_id!r}"
    return (
        f"the weights of {model_id!r} are not in the local Hugging Face cache, and video-env "
        "loads local files only (it never downloads, with or without HF_HUB_OFFLINE). "
        f"Download them where there is internet (`huggingface-cli download {model_id}`) "
        f"and copy the cache, or pass the local directory of a saved checkpoint as the model"
    )


def _torch_dtype(torch: Any, dtype: str, device: str) -> Any:
    if dtype == "auto":
        return "auto" if not device.startswith("cpu") else torch.float32
    value = getattr(torch, dtype, None)
    if not isinstance(value, torch.dtype):
        raise ConfigError(f"unknown torch dtype {dtype!r}")
    return value


def generate(
    model: Any,
    processor: Any,
    torch: Any,
    conversations: Sequence[list[dict[str, Any]]],
    *,
    max_new_tokens: int,
    temperature: float,
    device: str,
    guide: ReplyGuide | None = None,
    scores: bool = True,
    rows_per_prompt: int = 1,
) -> tuple[list[Generated], VisionCall]:
    """One batched ``generate`` over ``conversations`` (content parts: text, image, video).

    Args:
        model: The loaded model.
        processor: Its processor.
        torch: The ``torch`` module.
        conversations: The prompts, in the form :func:`prepare_conversations` takes.
        max_new_tokens: The reply's token cap.
        temperature: 0 for greedy decoding, else the sampling temperature.
        device: Where the model is.
        guide: Constrains every reply's end (:mod:`video_env.backends.hf_guide`).
        scores: Keep each generated token's probabilities (:attr:`Generated.tokens`).
        rows_per_prompt: Replies to decode for a single conversation, its prompt
            prefilled once (:func:`~video_env.backends.hf_shared_prefill.shared_prefill`).

    Raises:
        BackendError: If preprocessing or generation fails (e.g. out of memory).
        ConfigError: If ``rows_per_prompt`` is above 1 with several conversations.
    """
    if rows_per_prompt < 1 or (rows_per_prompt > 1 and len(conversations) != 1):
        raise ConfigError("rows_per_prompt is >= 1, and above 1 only with one conversation")
    texts, images, videos, metas, fed = prepare_conversations(processor, conversations)
    eos = eos_ids(model, processor)
    try:
        inputs = encode(processor, texts, images, videos, metas).to(device)
        options = _generation_options(processor, max_new_tokens, temperature, scores)
        if guide is not None:
            from transformers import LogitsProcessorList

            from video_env.backends.hf_guide import GuideLogitsProcessor

            # prompts are left-padded (load_vlm): every reply starts at the same offset
            prompt_length = inputs["input_ids"].shape[1]
            guided = GuideLogitsProcessor(guide, processor.tokenizer, prompt_length, eos)
            options["logits_processor"] = LogitsProcessorList([guided])
        with torch.inference_mode():
            if rows_per_prompt > 1:
                from video_env.backends.hf_shared_prefill import shared_prefill

                shared = shared_prefill(model, inputs, rows_per_prompt)
                n = rows_per_prompt
                inputs = shared or encode(
                    processor, texts * n, images * n, videos * n, metas * n
                ).to(device)
            out = model.generate(**inputs, **options)
    except (RuntimeError, ValueError) as exc:
        raise BackendError(f"generation failed: {exc}") from exc
    ids = inputs["input_ids"]
    visual_ids = [
        i
        for i in (
            getattr(processor, "image_token_id", None),
            getattr(processor, "video_token_id", None),
        )
        if i is not None
    ]  # processors of other VLMs may name only one placeholder
    visual = [int(n) for n in torch.isin(ids, torch.tensor(visual_ids, device=ids.device)).sum(1)]
    prompt = [int(n) for n in inputs["attention_mask"].sum(1)]
    rows = [
        _row(processor, torch, out, b, ids.shape[1], eos, prompt[b], visual[b])
        for b in range(ids.shape[0])
    ]
    call = VisionCall(tuple(fed), ids.shape[0], tuple(visual), tuple(prompt))
    return rows, call


def encode(
    processor: Any,
    texts: Sequence[str],
    images: Sequence[Any],
    videos: Sequence[Any],
    metas: Sequence[Any],
    *,
    padding_side: str | None = None,
) -> Any:
    """The processor's padded tensors for ``texts`` and their frames, fed at their sizes.

    Frames keep the sizes the backend decided (no resizing, no frame sampling); the
    inputs of training (``policies.training``) and of inference are built alike here.
    """
    extra: dict[str, Any] = {}
    if videos:
        extra["video_metadata"] = list(metas)
        if _accepts(processor.video_processor, "cap_pixels_per_frame"):
            extra["cap_pixels_per_frame"] = False  # sizes are already decided (and fed as is)
    if padding_side is not None:
        extra["padding_side"] = padding_side
    return processor(
        text=list(texts),
        images=list(images) or None,
        videos=list(videos) or None,
        do_resize=False,
        do_sample_frames=False,
        padding=True,
        return_tensors="pt",
        **extra,
    )


def prepare_conversations(
    processor: Any, conversations: Sequence[list[dict[str, Any]]]
) -> tuple[list[str], list[Any], list[Any], list[Any], list[tuple[tuple[float, ...], Size, str]]]:
    """Chat-template texts, images, videos, video metadata and fed (times, size, kind)."""
    from transformers.video_utils import VideoMetadata

    texts: list[str] = []
    images: list[Any] = []
    videos: list[Any] = []
    metas: list[Any] = []
    fed: list[tuple[tuple[float, ...], Size, str]] = []
    for conversation in conversations:
        template: list[dict[str, Any]] = []
        for message in conversation:
            parts: list[dict[str, Any]] = []
            for part in message["content"]:
                frames: FedFrames | None = part.get("frames")
                if frames is None:
                    parts.append(part)
                    continue
                parts.append({"type": part["type"]})
                fed.append((frames.times, frames.size, part["type"]))
                if part["type"] == "image":
                    images.append(frames.pixels[0])
                else:
                    n = len(frames.times)
                    videos.append(frames.pixels)
                    metas.append(VideoMetadata(n, fps=frames.fps, frames_indices=list(range(n))))
            template.append({"role": message["role"], "content": parts})
        texts.append(
            processor.apply_chat_template(template, tokenize=False, add_generation_prompt=True)
        )
    return texts, images, videos, metas, fed


def _accepts(video_processor: Any, name: str) -> bool:
    method = getattr(video_processor, "_preprocess", None)
    try:
        return method is not None and name in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def _generation_options(
    processor: Any, max_new_tokens: int, temperature: float, scores: bool = True
) -> dict[str, Any]:
    tok = processor.tokenizer
    options: dict[str, Any] = {
        "max_new_tokens": max_new_tokens,
        "do_sample": temperature > 0,
        "return_dict_in_generate": True,
        "output_scores": scores,
        "pad_token_id": tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
    }
    if temperature > 0:
        options.update(temperature=temperature, top_p=None, top_k=None)
    else:  # greedy: the checkpoint's sampling settings are not used (no warnings either)
        options.update(temperature=None, top_p=None, top_k=None)
    return options


def eos_ids(model: Any, processor: Any) -> set[int]:
    """The tokens that end a reply: the generation config's and the tokenizer's."""
    eos = model.generation_config.eos_token_id
    ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    if processor.tokenizer.eos_token_id is not None:
        ids.add(int(processor.tokenizer.eos_token_id))
    return ids


def _row(
    processor: Any,
    torch: Any,
    out: Any,
    b: int,
    n_prompt: int,
    eos: set[int],
    prompt_tokens: int,
    visual_tokens: int,
) -> Generated:
    generated = [int(t) for t in out.sequences[b, n_prompt:]]
    end = next((i + 1 for i, t in enumerate(generated) if t in eos), None)
    kept = generated[:end] if end is not None else generated
    tokens = []
    tok = processor.tokenizer
    for i, token_id in enumerate(kept if out.scores is not None else ()):
        probs = torch.softmax(out.scores[i][b].float(), dim=-1)
        tokens.append(TokenProb(tok.decode([token_id]), float(probs.max()), float(probs[token_id])))
    text = tok.decode(kept, skip_special_tokens=True)
    finish = "stop" if end is not None else "length"
    return Generated(text, tuple(tokens), prompt_tokens, visual_tokens, finish, tuple(kept))
