"""A transformers VLM continuing tool-calling chats, as TRL's GRPO rollouts run it.

``video-env train trl`` trains a VLM in TRL's multi-turn format: one growing chat, the
tools' JSON schemas in its system turn, each window's frames as images in a tool result,
and replies parsed by TRL's response parser into text and tool calls
(``policies/training/trl_env.py``). :class:`TransformersToolChat` generates the next reply
of such a chat the same way outside the trainer, so a checkpoint trained there can be
evaluated (:mod:`policies.videoscout.tools`): the chat rendered with the checkpoint's own
tool template and tokenized with its frames, the reply parsed by TRL's
``parse_response``.

Needs the ``models`` extra (torch, transformers) and the ``train`` extra (TRL's parser).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from video_env._optional import require
from video_env.backends.hf_generation import load_vlm, resolve_device
from video_env.backends.random_weights import has_random_weights
from video_env.errors import ConfigError, ContextExceeded
from video_env.metrics.cost import Cost
from video_env.pixel import is_pixel_vlm

__all__ = ["ToolReply", "TransformersToolChat"]

_PURPOSE = "a tool-calling VLM"


@dataclass(frozen=True)
class ToolReply:
    """One generated assistant turn.

    Attributes:
        message: The turn as TRL parses it: ``role``, ``content`` and, when the model
            called tools, ``tool_calls`` (``{"type": "function", "function": {"name",
            "arguments"}}`` each).
        text: The generated text, special tokens removed.
        prompt_tokens: Positions of the rendered chat (frames included).
        completion_tokens: Tokens generated.
        latency_s: Seconds the call took.
    """

    message: dict[str, Any]
    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float = 0.0


class TransformersToolChat:
    """A local chat VLM whose template renders tools (``train sft`` on tool chats, ``train trl``).

    Args:
        model: A local checkpoint folder (or a hub id in the local cache).
        device: ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda:0"``...
        dtype: ``"auto"`` (the checkpoint's dtype on a GPU, float32 on a CPU) or a torch
            dtype name.

    Raises:
        BackendNotInstalled: Without torch, transformers or TRL.
        BackendError: If the checkpoint cannot be loaded.
        ConfigError: If its chat template does not render tool calls (a Think-Act
            checkpoint: play it with ``videoscout:`` instead), or TRL has no parser for it.
    """

    simulated = False

    def __init__(self, model: str, *, device: str = "auto", dtype: str = "auto") -> None:
        torch = require("torch", "models", _PURPOSE)
        templates = require("trl.chat_template_utils", "train", _PURPOSE)
        self._torch = torch
        self.model_id = str(model)
        self.device = resolve_device(torch, device)
        loaded = load_vlm(self.model_id, self.device, dtype, None)
        self._model, self._processor = loaded.model, loaded.processor
        if not templates.supports_tool_calling(self._processor):
            raise ConfigError(
                f"{self.model_id}'s chat template does not render tool calls: it was not "
                "trained on tool chats (train sft on tool_chats.jsonl, or train trl)"
            )
        tokenizer = self._processor.tokenizer
        has_parser = any(
            getattr(tokenizer, attr, None) is not None
            for attr in ("response_template", "response_schema")
        )
        if not has_parser:  # as GRPOTrainer sets it up: its parser for a template it knows
            try:
                templates.add_response_schema(self._processor)
            except ValueError as exc:
                msg = f"{self.model_id}: no tool-call parser for its template: {exc}"
                raise ConfigError(msg) from None
        self._tokenizer = tokenizer
        self._parse = templates.parse_response
        self.dtype = loaded.dtype
        self.name = f"transformers-tools:{self.model_id}"
        text_config = self._model.config.get_text_config()
        #: The model's context: a longer chat raises :class:`ContextExceeded`.
        self.max_positions = int(text_config.max_position_embeddings)
        #: Loaded from a tiny test builder's folder: its replies mean nothing.
        self.random_weights = has_random_weights(self.model_id)
        #: The pixel VLM (trained on the synthetic world): results are labelled pixel-vlm.
        self.pixel_vlm = is_pixel_vlm(self.model_id)
        self.usage = Cost()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"TransformersToolChat({self.model_id!r}, device={self.device!r})"

    def reply(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[Any],
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
    ) -> ToolReply:
        """The next assistant turn of ``messages`` (greedy at temperature 0).

        Args:
            messages: The chat so far, in TRL's form: ``content`` a string or a list of
                ``{"type": "text", "text"}`` / ``{"type": "image", "image": PIL}`` parts;
                assistant turns may carry ``tool_calls``, tool turns a ``name``.
            tools: The tools as ``GRPOTrainer`` lists them (functions or bound methods
                whose signatures and docstrings give the schemas).
            max_new_tokens: Generation budget.
            temperature: Sampling temperature (0: greedy).

        Raises:
            ContextExceeded: If the chat already fills the model's context (the reply's
                budget is cut to what is left otherwise).
            ConfigError: On a bad budget or temperature.
        """
        if max_new_tokens < 1 or temperature < 0:
            raise ConfigError("max_new_tokens must be >= 1 and temperature >= 0")
        start = time.perf_counter()
        inputs = self._processor.apply_chat_template(
            list(messages),
            tools=list(tools),
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
            return_tensors="pt",
        )
        prompt_ids = inputs["input_ids"]
        width = int(prompt_ids.shape[1])
        if width >= self.max_positions:  # TRL's test for a tool result it drops
            raise ContextExceeded(
                f"the chat takes {width:,} positions: {self.model_id} holds {self.max_positions:,}"
            )
        # greedy leaves the checkpoint's sampling settings unused (as hf_generation does)
        sampling = {"temperature": temperature or None, "top_p": None, "top_k": None}
        with self._lock, self._torch.inference_mode():
            out = self._model.generate(
                **inputs.to(self.device),
                max_new_tokens=min(max_new_tokens, self.max_positions - width),
                do_sample=temperature > 0,
                pad_token_id=self._tokenizer.pad_token_id,
                **sampling,
            )
        ids = [int(t) for t in out[0, width:]]  # one chat: no padding after its end
        message = dict(
            self._parse(self._tokenizer, ids, prefix=prompt_ids[0].tolist(), tools=list(tools))
        )
        images = sum(
            1
            for m in messages
            if isinstance(m.get("content"), list)
            for part in m["content"]
            if isinstance(part, dict) and part.get("type") == "image"
        )
        with self._lock:
            self.usage = self.usage + Cost(vlm_calls=1, frames=images)
        return ToolReply(
            message=message,
            text=self._tokenizer.decode(ids, skip_special_tokens=True),
            prompt_tokens=width,
            completion_tokens=len(ids),
            latency_s=time.perf_counter() - start,
        )
