"""Model inputs for one VideoScout turn (prompt + the agent's reply), as inference sees it.

SFT and DAPO both need, for a turn, the token ids of ``prompt + reply`` and a mask of the
reply's tokens. The prompt goes through the same preprocessing as
:class:`~video_env.backends.transformers_vlm.TransformersVLM` at inference (its
``hf_generation`` module: the chat template, a multi-frame batch fed as one *video*, a
single frame as an image, frames at their shown size, no resampling), so the policy is
trained on exactly the inputs it is evaluated on. The reply follows the prompt (a text
reply with the end-of-turn token appended, or a rollout's sampled token ids as they
are); only its tokens carry loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from policies.training.turn_encoding import END_OF_TURN, TurnExample, collate_turns
from video_env.backends.base import FrameBatch, VisionMessage
from video_env.backends.vlm_frames import FedFrames, fed_frames, frames_fps
from video_env.errors import ConfigError
from video_env.video.base import Size

__all__ = [
    "END_OF_TURN",
    "TurnExample",
    "collate_turns",
    "conversation_from_messages",
    "conversation_from_row",
]


def conversation_from_messages(
    messages: Sequence[VisionMessage],
    min_pixels: int | None = None,
    max_pixels: int | None = None,
) -> list[dict[str, Any]]:
    """A chat of text and :class:`FrameBatch` parts as ``hf_generation`` takes it."""
    conversation: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content", "")
        parts: list[dict[str, Any]] = []
        for part in [content] if isinstance(content, str) else content:
            if isinstance(part, FrameBatch):
                fed = fed_frames(part, min_pixels, max_pixels)
                parts.append({"type": "image" if len(fed.times) == 1 else "video", "frames": fed})
            else:
                parts.append({"type": "text", "text": str(part)})
        conversation.append({"role": str(message.get("role", "user")), "content": parts})
    return conversation


def conversation_from_row(row: dict[str, Any]) -> TurnExample:
    """A turn of the distilled dataset (TRL format, frames as image files) → a turn example.

    Consecutive ``{"type": "image"}`` parts of a message are the frames of one batch and
    become one video part (one image part for a single frame), as at inference.
    """
    from PIL import Image

    paths = list(row["images"])
    times = [float(t) for t in row["frame_times"]]
    if len(paths) != len(times):
        raise ConfigError(f"{row.get('id')}: {len(paths)} images but {len(times)} frame times")
    cursor = 0
    conversation: list[dict[str, Any]] = []
    for message in row["prompt"]:
        content = message["content"]
        if isinstance(content, str):
            conversation.append(
                {"role": message["role"], "content": [{"type": "text", "text": content}]}
            )
            continue
        parts: list[dict[str, Any]] = []
        run: list[np.ndarray[Any, Any]] = []
        for part in [*content, {"type": "end"}]:
            if part["type"] == "image":
                with Image.open(paths[cursor]) as img:
                    run.append(np.asarray(img.convert("RGB"), dtype=np.uint8))
                cursor += 1
                continue
            if run:
                parts.append(_frames_part(np.stack(run), times[cursor - len(run) : cursor]))
                run = []
            if part["type"] == "text":
                parts.append({"type": "text", "text": str(part["text"])})
        conversation.append({"role": message["role"], "content": parts})
    completion = row["completion"]
    reply = completion if isinstance(completion, str) else str(completion[-1]["content"])
    return TurnExample(conversation, reply)


def _frames_part(pixels: np.ndarray[Any, Any], times: Sequence[float]) -> dict[str, Any]:
    size = Size(int(pixels.shape[2]), int(pixels.shape[1]))
    fed = FedFrames(pixels, tuple(times), size, frames_fps(times))
    return {"type": "image" if len(times) == 1 else "video", "frames": fed}
