"""What a fine-tuning run keeps of a pixel VLM: its tower (optionally) and its marker.

A checkpoint fine-tuned from the pixel VLM (docs/pixel_vlm.md) is still the tiny model
trained on the synthetic world, so its folder keeps ``pixel_vlm.json`` — the run that made
it, with the base's record under ``continued_from`` — and results from it stay labelled
``pixel-vlm`` (never a real benchmark model's).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = [
    "THINK_ACT_FORM",
    "TOOL_FORM",
    "freeze_vision_blocks",
    "keep_pixel_vlm_marker",
]


def freeze_vision_blocks(model: Any) -> int:
    """Freeze a Qwen2.5-VL's vision tower but its merger; returns the frozen tensors."""
    frozen = 0
    for name, param in model.model.visual.named_parameters():
        if not name.startswith("merger."):
            param.requires_grad_(False)
            frozen += 1
    return frozen


def freeze_language_layers(model: Any, layers: int) -> int:
    """Freeze the first ``layers`` decoder layers of a Qwen2.5-VL; returns the frozen tensors."""
    frozen = 0
    for layer in model.model.language_model.layers[:layers]:
        for param in layer.parameters():
            param.requires_grad_(False)
            frozen += 1
    return frozen


#: The reply formats a run trains into, as the pixel VLM marker names them.
THINK_ACT_FORM = "VideoScout's Think-Act format"
TOOL_FORM = "TRL's tool-calling chat"


def keep_pixel_vlm_marker(
    base: str,
    out: Path,
    stage: str,
    record: dict[str, Any],
    form: str = THINK_ACT_FORM,
) -> bool:
    """Write ``out``'s pixel VLM marker when ``base`` is a pixel VLM; returns whether it was.

    Args:
        base: The checkpoint the run started from.
        out: The run's output folder.
        stage: What the run was (``"sft"``, ``"rl"``, ``"trl"``): the key of ``record``.
        record: The run's settings, wall time, machine and command.
        form: The reply format the run trained into.
    """
    from video_env.pixel import PIXEL_VLM_MARKER, is_pixel_vlm

    if not is_pixel_vlm(base):
        return False
    previous = json.loads((Path(base) / PIXEL_VLM_MARKER).read_text(encoding="utf-8"))
    meta = {
        "model": f"the pixel VLM trained into {form} ({stage})",
        stage: record,
        "continued_from": previous,
    }
    (out / PIXEL_VLM_MARKER).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return True
