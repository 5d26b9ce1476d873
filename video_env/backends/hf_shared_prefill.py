"""Several replies to one prompt: the prompt prefilled once, the replies decoded together.

The ``G`` rollouts of a DAPO group start from the same first turn (same frames, same
text). ``generate`` with ``G`` copies of the prompt would run the vision tower and the
prefill ``G`` times; :func:`shared_prefill` runs them once, on the prompt but its last
token, copies the key-value cache ``G`` times, and returns the inputs with which
``model.generate`` decodes the ``G`` rows together (it feeds the last prompt token of
each row, then samples each row on its own). Under greedy decoding every row is the
reply a single call gives (tested); at a temperature the rows are independent samples.

Qwen2.5-VL's multimodal rotary positions are kept: the prompt's position ids are computed
once, as ``generate`` computes them (``_prepare_position_ids_for_generation``, which also
stores the model's ``rope_deltas``), used by the prefill and handed to ``generate``, which
takes the last token's and counts on from it. For a model without that hook
:func:`shared_prefill` returns None and ``hf_generation`` batches ``G`` copies of the
prompt instead (its frames still encoded once where a
:mod:`~video_env.backends.vision_cache` is installed).
"""

from __future__ import annotations

import inspect
from typing import Any

from video_env.errors import ConfigError

__all__ = ["PER_TOKEN_INPUTS", "cache_argument", "shared_prefill"]

#: Processor outputs with one entry per prompt token (cut and copied with the prompt).
PER_TOKEN_INPUTS = frozenset({"input_ids", "attention_mask", "mm_token_type_ids", "token_type_ids"})


def cache_argument(model: Any) -> str:
    """The name under which ``model``'s forward takes a key-value cache.

    ``cache`` in recent transformers releases, ``past_key_values`` before.
    """
    try:
        parameters = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in parameters else "past_key_values"


def shared_prefill(model: Any, inputs: Any, rows: int) -> dict[str, Any] | None:
    """``model.generate``'s inputs for ``rows`` replies to the one prompt of ``inputs``.

    Runs the model (vision tower and prefill) once on the prompt without its last token,
    inside the caller's ``torch.inference_mode``.

    Args:
        model: A transformers causal VLM.
        inputs: The processor's tensors for one prompt (batch of 1), on the model's device.
        rows: Replies to decode together.

    Returns:
        ``input_ids``, ``attention_mask`` (and token types) and ``position_ids`` repeated
        ``rows`` times, and the prefilled cache repeated alike under
        :func:`cache_argument`'s name; ``None`` for a model whose prompt positions this
        module cannot compute (the caller then batches copies of the prompt).

    Raises:
        ConfigError: If ``inputs`` holds more than one prompt, or ``rows`` is below 1.
    """
    ids = inputs["input_ids"]
    if ids.shape[0] != 1 or rows < 1:
        raise ConfigError("a shared prefill takes one prompt and rows >= 1")
    if ids.shape[1] < 2:
        raise ConfigError("a shared prefill needs a prompt of two tokens or more")
    per_token = {k: v for k, v in inputs.items() if k in PER_TOKEN_INPUTS}
    positions = _prompt_positions(model, inputs)
    if positions is None:
        return None
    prefix = {k: v for k, v in inputs.items() if k not in PER_TOKEN_INPUTS}
    prefix.update({k: v[:, :-1] for k, v in per_token.items()})
    prefix["position_ids"] = positions[..., :-1]
    name = cache_argument(model)
    out = model(**prefix, use_cache=True, logits_to_keep=1)
    cache = getattr(out, name, None)
    if cache is None:
        cache = out.past_key_values if name == "cache" else getattr(out, "cache", None)
    if cache is None:
        raise ConfigError(f"{type(model).__name__} returned no key-value cache")
    if rows > 1:
        cache.batch_repeat_interleave(rows)
    expanded: dict[str, Any] = {k: v.repeat_interleave(rows, dim=0) for k, v in per_token.items()}
    expanded["position_ids"] = positions.repeat_interleave(rows, dim=positions.dim() - 2)
    expanded[name] = cache
    return expanded


def _prompt_positions(model: Any, inputs: Any) -> Any | None:
    """The prompt's position ids as ``generate`` computes them, or None without the hook."""
    prepare = getattr(model, "_prepare_position_ids_for_generation", None)
    if prepare is None:
        return None
    kwargs = {k: v for k, v in inputs.items() if k != "input_ids"}
    try:
        return prepare(inputs["input_ids"], kwargs)
    except TypeError:  # another signature: not the hook this module knows
        return None
