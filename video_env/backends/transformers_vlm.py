"""Qwen2.5-VL (and other transformers chat VLMs) as the VLM, captioner and vision-chat backend.

One loaded model serves three roles of :mod:`video_env.backends.base`:
:meth:`TransformersVLM.answer` (FALCON-Bench's VQA prompt, greedy, confidence from the
generated tokens' probabilities: see :mod:`video_env.backends.confidence`),
:meth:`~TransformersVLM.caption` (FALCONEye's light-caption prompt, ``max_tokens`` new
tokens) and :meth:`~TransformersVLM.chat` (free generation from messages whose content
interleaves text and :class:`~video_env.backends.base.FrameBatch` es).

Frames: the model sees each batch's frames at the batch's timestamps and size. A batch
of several frames is a video (its sampling rate sets Qwen2.5-VL's temporal positions), a
single frame an image. Qwen needs sides on a 28-pixel grid: a size off the grid, or
outside ``[min_pixels, max_pixels]`` when those budgets are set, is resized with Qwen's
``smart_resize`` rule; the size actually fed is recorded in :attr:`~TransformersVLM.last_call`.
Several windows of one step go through :meth:`~TransformersVLM.answer_batch` in one
left-padded batched ``generate``.

Speed (issue 72): torch runs on as many threads as the machine has free cores
(:mod:`video_env.backends.torch_threads`; ``threads`` or ``VIDEO_ENV_TORCH_THREADS``
override it); the vision tower's outputs are cached by the frames' content
(:mod:`video_env.backends.vision_cache`, ``vision_cache_mb``, 0 turns it off), so a
rewatched window is encoded once; per-token scores are computed only for confidences
and asked-for log-probabilities; :meth:`~TransformersVLM.chat_n` decodes several replies
to one prompt prefilled once. A static key-value cache was measured and not kept (no
faster on a CPU: ``docs/architecture.md``).

Weights are never downloaded: an id is looked up in the local Hugging Face cache only
(``local_files_only=True``, with or without ``HF_HUB_OFFLINE``); a miss is an immediate
:class:`BackendError` that says how to point at a local directory.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from typing import Any

from video_env._optional import require
from video_env.backends import vlm_prompts as prompts
from video_env.backends.base import Answer, FrameBatch, ReplyGuide, VisionMessage
from video_env.backends.confidence import (
    check_rule,
    confidence,
    option_letters,
    parse_verbal_confidence,
    verbal_instruction,
)
from video_env.backends.hf_generation import (
    Generated,
    VisionCall,
    generate,
    load_vlm,
    resolve_device,
)
from video_env.backends.llm.base import Completion
from video_env.backends.random_weights import has_random_weights
from video_env.backends.torch_threads import apply_threads
from video_env.backends.vision_cache import VisionFeatureCache, install_vision_cache
from video_env.backends.vlm_frames import (
    check_pixel_budgets,
    fed_frames,
    message_parts,
    processor_budgets,
)
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost
from video_env.pixel import is_pixel_vlm

__all__ = ["DEFAULT_MODEL", "TransformersVLM"]

DEFAULT_MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"
_PURPOSE = "the transformers VLM backend (Qwen2.5-VL)"


class TransformersVLM:
    """A transformers chat VLM: ``VLM``, ``Captioner`` and ``VisionChat`` in one.

    Args:
        model: Hub id (must be in the local cache when offline) or a local directory.
        device: ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda:0"``...
        dtype: ``"auto"`` (the checkpoint's dtype on a GPU, float32 on a CPU) or a torch
            dtype name (``"bfloat16"``...).
        attn_implementation: Passed to ``from_pretrained`` (``"sdpa"``,
            ``"flash_attention_2"``...); transformers' default if None.
        min_pixels: Smallest frame area fed (Qwen's budget); the checkpoint processor's
            own (``size["shortest_edge"]``) if None.
        max_pixels: Largest frame area fed (the paper's runs use ``768 * 28 * 28``); the
            checkpoint processor's own (``size["longest_edge"]``, 12.8 M pixels for
            Qwen2.5-VL-7B, so a bench's frames are kept) if None.
        confidence: ``"falconeye"`` (default), ``"sequence"``, ``"mean"`` or ``"verbal"``.
        max_batch: Most windows in one batched forward pass.
        answer_max_tokens: New-token cap of answers; FALCON-Bench's (64 MCQ, 128 open)
            if None.
        threads: Torch threads: a count, ``"auto"`` (the machine's free cores,
            :func:`~video_env.backends.torch_threads.choose_threads`), or None (the
            ``VIDEO_ENV_TORCH_THREADS`` variable, else ``"auto"``). Set when the backend
            is built; torch's count is the process's.
        vision_cache_mb: Megabytes of vision-tower outputs kept, keyed by the frames'
            content (:mod:`~video_env.backends.vision_cache`); 0 turns the cache off.

    Raises:
        BackendNotInstalled: If torch or transformers is missing (the ``models`` extra).
        BackendError: If the model cannot be found or loaded.
        ConfigError: On a bad setting.
    """

    simulated = False
    #: ``chat`` takes a :class:`ReplyGuide` (guided decoding).
    accepts_guide = True

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        device: str = "auto",
        dtype: str = "auto",
        attn_implementation: str | None = None,
        min_pixels: int | None = None,
        max_pixels: int | None = None,
        confidence: str = "falconeye",
        max_batch: int = 8,
        answer_max_tokens: int | None = None,
        threads: int | str | None = None,
        vision_cache_mb: int = 512,
    ) -> None:
        check_pixel_budgets(min_pixels, max_pixels)
        if max_batch < 1 or (answer_max_tokens is not None and answer_max_tokens < 1):
            raise ConfigError("max_batch and answer_max_tokens must be >= 1")
        if vision_cache_mb < 0:
            raise ConfigError(f"vision_cache_mb must be >= 0, got {vision_cache_mb}")
        self.confidence_rule = check_rule(confidence)
        self._torch = require("torch", "models", _PURPOSE)
        #: The torch thread count this backend set.
        self.threads = apply_threads(self._torch, threads)
        self.model_id = str(model)
        self.max_batch = max_batch
        self.answer_max_tokens = answer_max_tokens
        self.attn_implementation = attn_implementation
        self.device = resolve_device(self._torch, device)
        loaded = load_vlm(self.model_id, self.device, dtype, attn_implementation)
        self._model, self._processor = loaded.model, loaded.processor
        #: The vision features cache (None when off, or for a model it cannot serve).
        self.vision_cache: VisionFeatureCache | None = None
        if vision_cache_mb:
            cache = VisionFeatureCache(vision_cache_mb * 2**20)
            self.vision_cache = install_vision_cache(self._model, cache)
        self.min_pixels, self.max_pixels = processor_budgets(
            self._processor, min_pixels, max_pixels
        )
        self.dtype = loaded.dtype
        self.revision = loaded.revision
        self.name = f"transformers:{self.model_id}"
        #: Loaded from a tiny test builder's folder: its answers mean nothing.
        self.random_weights = has_random_weights(self.model_id)
        #: The pixel VLM (trained on the synthetic world): results are labelled pixel-vlm.
        self.pixel_vlm = is_pixel_vlm(self.model_id)
        self.usage = Cost()
        self.last_call: VisionCall | None = None
        self._usage_lock = threading.Lock()
        self._model_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"TransformersVLM({self.model_id!r}, device={self.device!r}, dtype={self.dtype!r})"

    @property
    def config(self) -> dict[str, object]:
        """Everything that changes this backend's outputs (for caches and run metadata)."""
        return {
            "backend": "transformers",
            "model": self.model_id,
            "revision": self.revision,
            "dtype": self.dtype,
            "attn_implementation": self.attn_implementation,
            "min_pixels": self.min_pixels,
            "max_pixels": self.max_pixels,
            "confidence": self.confidence_rule,
            "generation": {"greedy": True, "answer_max_tokens": self._answer_caps()},
            "prompts": prompts.prompts_digest(),
        }

    # -- VLM ---------------------------------------------------------------------------

    def answer(
        self, frames: FrameBatch, question: str, options: Sequence[str] | None = None
    ) -> Answer:
        """Answer ``question`` (an MCQ with ``options``) from ``frames``, with a confidence."""
        return self.answer_batch([frames], question, options)[0]

    def answer_batch(
        self, batches: Sequence[FrameBatch], question: str, options: Sequence[str] | None = None
    ) -> list[Answer]:
        """Answer the same question on several windows, ``max_batch`` per forward pass.

        Returns:
            One :class:`Answer` per batch, in order (the same as one call per batch, up
            to floating-point noise of padding).
        """
        text = prompts.question_prompt(question, options)
        if self.confidence_rule == "verbal":
            text = f"{text}\n{verbal_instruction()}"
        letters = option_letters(options)
        cap = self._answer_caps()["mcq" if options else "open"]
        answers: list[Answer] = []
        for start in range(0, len(batches), self.max_batch):
            chunk = batches[start : start + self.max_batch]
            conversations = [self._conversation([text, b]) for b in chunk]
            for gen in self._generate(conversations, cap, 0.0):
                answers.append(self._answer(gen, letters))
        self._add_usage(Cost(vlm_calls=len(batches)), batches, answers)
        return answers

    def _answer(self, gen: Generated, letters: Sequence[str]) -> Answer:
        tokens = gen.tokens
        text, stated = gen.text.strip(), None
        if self.confidence_rule == "verbal":
            text, stated = parse_verbal_confidence(text)
        conf = confidence(self.confidence_rule, tokens, letters, stated)
        return Answer(text, conf, tuple(t.top1 for t in tokens), gen.n_visual_tokens)

    # -- Captioner ---------------------------------------------------------------------

    def caption(
        self, frames: FrameBatch, max_tokens: int = prompts.CAPTION_MAX_TOKENS, style: str = "light"
    ) -> str:
        """A caption of ``frames`` in ``style`` (at most ``max_tokens`` new tokens)."""
        return self.caption_batch([frames], max_tokens, style)[0]

    def caption_batch(
        self,
        batches: Sequence[FrameBatch],
        max_tokens: int = prompts.CAPTION_MAX_TOKENS,
        style: str = "light",
    ) -> list[str]:
        """Captions of several clips in ``style``, ``max_batch`` per forward pass."""
        if max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1, got {max_tokens}")
        prompt = prompts.caption_prompt(style)
        texts: list[Generated] = []
        for start in range(0, len(batches), self.max_batch):
            chunk = batches[start : start + self.max_batch]
            conversations = [self._conversation([prompt, b]) for b in chunk]
            texts.extend(self._generate(conversations, max_tokens, 0.0, scores=False))
        captions = [g.text.strip() for g in texts]
        self._add_usage(Cost(caption_calls=len(batches)), batches, None, texts)
        return captions

    # -- VisionChat --------------------------------------------------------------------

    def chat(
        self,
        messages: Sequence[VisionMessage],
        *,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        guide: ReplyGuide | None = None,
        logprobs: bool = False,
    ) -> Completion:
        """Continue ``messages`` (content: text and frame batches), greedy at temperature 0.

        ``guide`` constrains the reply's end (guided decoding, :class:`ReplyGuide`); the
        log-probabilities are then those of the guided distribution.

        Returns:
            The completion: text, prompt tokens (visual ones included), generated
            tokens and their ids, finish reason, and with ``logprobs`` the
            log-probability of each generated token.
        """
        return self.chat_n(
            messages,
            1,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            guide=guide,
            logprobs=logprobs,
        )[0]

    def chat_n(
        self,
        messages: Sequence[VisionMessage],
        n: int,
        *,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        guide: ReplyGuide | None = None,
        logprobs: bool = False,
    ) -> list[Completion]:
        """``n`` replies to ``messages`` (as :meth:`chat`), decoded together.

        The prompt is encoded and prefilled once
        (:mod:`~video_env.backends.hf_shared_prefill`). Under greedy decoding the ``n``
        replies are :meth:`chat`'s; at a temperature, ``n`` independent samples. Usage
        counts ``n`` calls.
        """
        if max_new_tokens < 1 or temperature < 0 or n < 1:
            raise ConfigError("max_new_tokens and n must be >= 1, and temperature >= 0")
        start = time.perf_counter()
        conversation: list[dict[str, Any]] = []
        batches: list[FrameBatch] = []
        for message in messages:
            parts = message_parts(message)
            batches.extend(p for p in parts if isinstance(p, FrameBatch))
            conversation.extend(self._conversation(parts, role=str(message.get("role", "user"))))
        rows = self._generate(
            [conversation], max_new_tokens, temperature, False, guide, logprobs, rows=n
        )
        self._add_usage(Cost(vlm_calls=n), list(batches) * n, None, rows)
        latency = time.perf_counter() - start
        return [
            Completion(
                text=gen.text,
                model=self.model_id,
                prompt_tokens=gen.prompt_tokens,
                completion_tokens=len(gen.token_ids or ()),
                logprobs=_logprobs(gen) if logprobs else None,
                finish_reason=gen.finish_reason,
                latency_s=latency,
                token_ids=gen.token_ids,
            )
            for gen in rows
        ]

    # -- internals ---------------------------------------------------------------------

    def _answer_caps(self) -> dict[str, int]:
        if self.answer_max_tokens is not None:
            return {"mcq": self.answer_max_tokens, "open": self.answer_max_tokens}
        return dict(prompts.ANSWER_MAX_TOKENS)

    def _conversation(
        self, parts: Sequence[str | FrameBatch], role: str = "user"
    ) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = []
        for part in parts:
            if isinstance(part, str):
                content.append({"type": "text", "text": part})
            else:
                fed = fed_frames(part, self.min_pixels, self.max_pixels)
                kind = "image" if len(fed.times) == 1 else "video"
                content.append({"type": kind, "frames": fed})
        return [{"role": role, "content": content}]

    def _generate(
        self,
        conversations: Sequence[list[dict[str, Any]]],
        max_new_tokens: int,
        temperature: float,
        system: bool = True,
        guide: ReplyGuide | None = None,
        scores: bool = True,
        rows: int = 1,
    ) -> list[Generated]:
        if system:
            head = [
                {"role": "system", "content": [{"type": "text", "text": prompts.SYSTEM_PROMPT}]}
            ]
            conversations = [head + c for c in conversations]
        with self._model_lock:
            results, call = generate(
                self._model,
                self._processor,
                self._torch,
                conversations,
                max_new_tokens=max_new_tokens,
                temperature=temperature,
                device=self.device,
                guide=guide,
                scores=scores,
                rows_per_prompt=rows,
            )
            self.last_call = call
        return results

    def _add_usage(
        self,
        cost: Cost,
        batches: Sequence[FrameBatch],
        answers: Sequence[Answer] | None,
        generated: Sequence[Generated] | None = None,
    ) -> None:
        visual = sum(a.n_visual_tokens for a in answers or ())
        visual += sum(g.n_visual_tokens for g in generated or ())
        frames = sum(len(b) for b in batches)
        with self._usage_lock:
            self.usage = self.usage + cost + Cost(frames=frames, visual_tokens=visual)


def _logprobs(gen: Generated) -> tuple[float, ...]:
    return tuple(math.log(t.chosen) if t.chosen > 0 else -math.inf for t in gen.tokens)
