"""Training inputs of a chat VLM: a turn's prompt and reply, tokenised as inference sees them.

The prompt goes through the same preprocessing as
:class:`~video_env.backends.transformers_vlm.TransformersVLM` at inference
(:mod:`video_env.backends.hf_generation`: the chat template, a multi-frame batch fed as one
*video*, a single frame as an image, frames at their fed size, no resampling); the reply
is appended as text followed by the end-of-turn token, and only those tokens carry loss.
Used by the VideoScout trainers (``policies.training``) and the pixel VLM's training.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from video_env._optional import require
from video_env.backends.hf_generation import encode, prepare_conversations
from video_env.errors import ConfigError

__all__ = ["END_OF_TURN", "TurnExample", "collate_turns"]

_PURPOSE = "training a chat VLM"
#: Qwen's end-of-turn token, appended to every reply.
END_OF_TURN = "<|im_end|>"


@dataclass(frozen=True)
class TurnExample:
    """One turn: the conversation in ``hf_generation``'s form and the agent's reply.

    ``pattern``: the regular expression the reply was sampled under (format-guided
    rollouts, ``ReplyGuide.regex()``), so that DAPO can score the guided distribution.
    """

    conversation: list[dict[str, Any]]
    reply: str
    pattern: str | None = None


def collate_turns(processor: Any, turns: Sequence[TurnExample]) -> dict[str, Any]:
    """A padded batch: ``input_ids``, ``attention_mask``, vision tensors, and ``labels``.

    ``labels`` are -100 everywhere except on the reply's tokens (its end-of-turn token
    included): the system prompt, the window text, the frames and the question carry
    no loss. Rows are padded on the right.

    Raises:
        ConfigError: If the reply's tokens do not close the tokenised sequence (a chat
            template or tokenizer that merges across the prompt/reply boundary).
    """
    torch = require("torch", "models", _PURPOSE)
    conversations = [t.conversation for t in turns]
    texts, images, videos, metas, _ = prepare_conversations(processor, conversations)
    full = [text + t.reply + END_OF_TURN for text, t in zip(texts, turns, strict=True)]
    batch = encode(processor, full, images, videos, metas, padding_side="right")
    ids, mask = batch["input_ids"], batch["attention_mask"]
    labels = torch.full_like(ids, -100)
    tok = processor.tokenizer
    for row, turn in enumerate(turns):
        reply_ids = tok(turn.reply + END_OF_TURN, add_special_tokens=False)["input_ids"]
        length = int(mask[row].sum())
        start = length - len(reply_ids)
        if start <= 0 or ids[row, start:length].tolist() != list(reply_ids):
            raise ConfigError("the reply's tokens do not end the sequence; check the chat template")
        labels[row, start:length] = ids[row, start:length]
    out = dict(batch)
    out["labels"] = labels
    return out
