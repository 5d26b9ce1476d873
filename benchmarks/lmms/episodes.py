"""What an episode leaves in lmms-eval's samples: one summary shared by both directions.

The summary is the episode record's answer, grade, evidence window, GToU, cost and
provenance labels, JSON-ready and short (no trajectory): the model direction attaches it to
each request's logged sample, the task direction returns it as the rollout's final response.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["SUMMARY_FIELDS", "model_tokens", "summarise"]

#: Record fields copied into the summary (absent ones are left out).
SUMMARY_FIELDS = (
    "sample_id",
    "env",
    "policy",
    "answer",
    "correct",
    "window",
    "gtou",
    "reward",
    "ended_by",
    "turns",
    "frames",
    "frames_shown",
    "vlm_calls",
    "caption_calls",
    "clip_calls",
    "visual_tokens",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "money_usd",
    "invalid_actions",
    "simulated",
    "standin",
    "sensors_on_real_video",
    "pixel_real",
    "pixel_vlm",
    "random_weights",
    "wall_s",
    "error",
)


def summarise(record: dict[str, Any], *, has_ground_truth: bool | None = None) -> dict[str, Any]:
    """The short, JSON-ready summary of an episode record.

    Args:
        record: :func:`policies.run_episode`'s record or an env's ``info["episode"]``.
        has_ground_truth: Whether the sample had evidence intervals; without them GToU is
            ``None`` (not 0), so that aggregates skip it.

    Returns:
        The summary: :data:`SUMMARY_FIELDS` present in the record, plus
        ``perception_calls`` (VLM + captioner + CLIP calls) and ``model_tokens``.
    """
    out = {key: _plain(record[key]) for key in SUMMARY_FIELDS if key in record}
    if has_ground_truth is False:
        out["gtou"] = None
    out["perception_calls"] = sum(
        int(record.get(k) or 0) for k in ("vlm_calls", "caption_calls", "clip_calls")
    )
    out["model_tokens"] = model_tokens(record)
    return out


def model_tokens(record: dict[str, Any]) -> dict[str, int]:
    """Tokens the models read and wrote.

    ``input``: the VLM's visual tokens and the LLM's prompt; ``output``: the LLM's completion.
    """
    visual = int(record.get("visual_tokens") or 0)
    prompt = int(record.get("prompt_tokens") or 0)
    return {"input": visual + prompt, "output": int(record.get("completion_tokens") or 0)}


def _plain(value: Any) -> Any:
    """A JSON-ready copy (tuples → lists, numpy scalars → Python, NaN → None)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
