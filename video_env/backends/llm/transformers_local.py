"""A local causal language model through Hugging Face transformers.

The prompt is the tokenizer's chat template when it has one, else a plain
``role: content`` transcript. Decoding is greedy at temperature 0 (deterministic);
log-probabilities are those of the model's own distribution (raw logits, before any
sampling warpers). There is no constrained decoding: ``json=True`` changes nothing, so
parse replies with :func:`~video_env.backends.llm.json_reply.parse_json_reply`. Local
calls cost no money; tokens are counted exactly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from video_env._optional import require
from video_env.backends.llm.base import Completion, Message
from video_env.backends.model_paths import missing_model_path
from video_env.errors import BackendError, ConfigError
from video_env.metrics.cost import Cost

__all__ = ["TransformersLLM", "plain_prompt"]

_PURPOSE = "the local transformers LLM backend"


def plain_prompt(messages: Sequence[Message]) -> str:
    """A ``role: content`` transcript ending in ``assistant:``, for tokenizers with no template."""
    lines = [f"{m.get('role', 'user')}: {m.get('content', '')}" for m in messages]
    return "\n".join([*lines, "assistant:"])


class TransformersLLM:
    """A causal LM from a local directory or a cached Hub name (no download when offline).

    Args:
        model_name_or_path: A directory saved with ``save_pretrained`` or a Hub name.
        device: Torch device.
        dtype: Torch dtype name (``"float32"``, ``"bfloat16"``...); the checkpoint's if None.
        max_new_tokens: Default cap on generated tokens.

    Raises:
        BackendNotInstalled: If torch or transformers is missing (the ``models`` extra).
        BackendError: If the model or tokenizer cannot be loaded.
        ConfigError: On an unknown dtype or a non-positive ``max_new_tokens``.
    """

    def __init__(
        self,
        model_name_or_path: str | Path,
        device: str = "cpu",
        dtype: str | None = None,
        max_new_tokens: int = 256,
    ) -> None:
        if max_new_tokens < 1:
            raise ConfigError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if missing_model_path(str(model_name_or_path)):  # never handed to the Hub as an id
            raise BackendError(f"cannot load {str(model_name_or_path)!r}: no model directory there")
        self._torch = require("torch", "models", _PURPOSE)
        transformers = require("transformers", "models", _PURPOSE)
        transformers.logging.disable_progress_bar()
        self.model_name_or_path = str(model_name_or_path)
        self.device = device
        self.dtype = dtype
        self.max_new_tokens = max_new_tokens
        kwargs: dict[str, Any] = {}
        if dtype is not None:
            torch_dtype = getattr(self._torch, dtype, None)
            if not isinstance(torch_dtype, self._torch.dtype):
                raise ConfigError(f"unknown torch dtype {dtype!r}")
            kwargs["dtype"] = torch_dtype
        try:
            self._tokenizer = transformers.AutoTokenizer.from_pretrained(
                self.model_name_or_path,
                local_files_only=True,  # never a download
            )
            model = transformers.AutoModelForCausalLM.from_pretrained(
                self.model_name_or_path, local_files_only=True, **kwargs
            )
        except (OSError, ValueError) as exc:
            raise BackendError(f"cannot load {self.model_name_or_path!r}: {exc}") from exc
        self._model = model.to(device).eval()
        self.name = f"local:{Path(self.model_name_or_path).name or self.model_name_or_path}"
        self.usage = Cost()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"TransformersLLM({self.model_name_or_path!r}, device={self.device!r})"

    def describe(self) -> dict[str, Any]:
        """Settings for run metadata."""
        return {
            "backend": "transformers",
            "model": self.model_name_or_path,
            "device": self.device,
            "dtype": self.dtype,
            "max_new_tokens": self.max_new_tokens,
            "chat_template": self.has_chat_template,
        }

    @property
    def has_chat_template(self) -> bool:
        """Whether the tokenizer brings a chat template."""
        return bool(getattr(self._tokenizer, "chat_template", None))

    def prompt(self, messages: Sequence[Message]) -> str:
        """The text the model is given for ``messages``."""
        if self.has_chat_template:
            text = self._tokenizer.apply_chat_template(
                [dict(m) for m in messages], tokenize=False, add_generation_prompt=True
            )
            return str(text)
        return plain_prompt(messages)

    def chat(
        self,
        messages: Sequence[Message],
        *,
        json: bool = False,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        logprobs: bool = False,
    ) -> Completion:
        """Reply to ``messages`` (see :class:`~video_env.backends.llm.base.LLM`).

        ``json`` is accepted for the protocol and ignored (no constrained decoding).

        Raises:
            BackendError: If generation fails (e.g. out of memory).
        """
        del json  # no constrained decoding here; callers parse and validate the reply
        start = time.perf_counter()
        tok = self._tokenizer
        encoded = tok(
            self.prompt(messages),
            return_tensors="pt",
            add_special_tokens=not self.has_chat_template,
        ).to(self.device)
        n_prompt = int(encoded["input_ids"].shape[1])
        options: dict[str, Any] = {
            "max_new_tokens": max_tokens or self.max_new_tokens,
            "do_sample": temperature > 0,
            "return_dict_in_generate": True,
            "output_logits": logprobs,
            "pad_token_id": tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
        }
        if temperature > 0:
            options["temperature"] = temperature
        else:  # greedy: silence warnings about sampling settings of the checkpoint
            options.update(temperature=None, top_p=None, top_k=None)
        try:
            with self._torch.inference_mode():
                out = self._model.generate(**encoded, **options)
        except (RuntimeError, ValueError) as exc:
            raise BackendError(f"generation with {self.name} failed: {exc}") from exc
        generated = out.sequences[0, n_prompt:]
        completion = Completion(
            text=tok.decode(generated, skip_special_tokens=True),
            model=self.model_name_or_path,
            prompt_tokens=n_prompt,
            completion_tokens=int(generated.shape[0]),
            logprobs=self._logprobs(out.logits, generated) if logprobs else None,
            finish_reason=self._finish_reason(generated),
            latency_s=time.perf_counter() - start,
        )
        with self._lock:
            self.usage = self.usage + completion.cost()
        return completion

    def _logprobs(self, logits: Sequence[Any], generated: Any) -> tuple[float, ...]:
        torch = self._torch
        if not logits:
            return ()
        steps = torch.stack([step[0] for step in logits]).float()  # [n, vocab]
        chosen = torch.log_softmax(steps, dim=-1).gather(1, generated[: len(logits), None])
        return tuple(float(v) for v in chosen[:, 0].tolist())

    def _finish_reason(self, generated: Any) -> str:
        eos = self._model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos]) | {self._tokenizer.eos_token_id}
        if generated.shape[0] and int(generated[-1]) in eos_ids:
            return "stop"
        return "length"
