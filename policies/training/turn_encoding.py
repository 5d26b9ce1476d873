"""Training inputs of a chat VLM: a turn's prompt and reply, tokenised as inference sees them.

The prompt goes through the same preprocessing as
:class:`~video_env.backends.transformers_vlm.TransformersVLM` at inference
(:mod:`video_env.backends.hf_generation`: the chat template, a multi-frame batch fed as one
*video*, a single frame as an image, frames at their fed size, no resampling). The reply
follows it, and only its tokens carry loss: a text reply (SFT's data) tokenized with the
end-of-turn token appended, or the token ids a rollout sampled, as they are (RL).
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
#: Qwen's end-of-turn token, appended to every text reply.
END_OF_TURN = "<|im_end|>"
#: The processor outputs with one entry per token, widened when sampled ids are appended.
_PER_TOKEN = frozenset({"input_ids", "attention_mask", "mm_token_type_ids", "token_type_ids"})


@dataclass(frozen=True)
class TurnExample:
    """One turn: the conversation in ``hf_generation``'s form and the agent's reply.

    Attributes:
        conversation: The prompt, in ``hf_generation``'s form.
        reply: The reply's text.
        pattern: The regular expression the reply was sampled under (format-guided
            rollouts, ``ReplyGuide.regex()``), so that DAPO can score the guided
            distribution.
        reply_ids: The reply's token ids as a rollout sampled them (its end token
            included if it ended). When given they carry the loss as they are, nothing
            appended; otherwise ``reply`` is tokenized and the end-of-turn token appended
            (SFT's data).
    """

    conversation: list[dict[str, Any]]
    reply: str
    pattern: str | None = None
    reply_ids: tuple[int, ...] | None = None

    def loss_ids(self, tokenizer: Any) -> list[int]:
        """The tokens that carry this turn's loss (they end its sequence)."""
        if self.reply_ids is not None:
            return list(self.reply_ids)
        return list(tokenizer(self.reply + END_OF_TURN, add_special_tokens=False)["input_ids"])


def collate_turns(processor: Any, turns: Sequence[TurnExample]) -> dict[str, Any]:
    """A padded batch: ``input_ids``, ``attention_mask``, vision tensors, and ``labels``.

    ``labels`` are -100 everywhere except on the reply's tokens
    (:meth:`TurnExample.loss_ids`): the system prompt, the window text, the frames and
    the question carry no loss. A turn with ``reply_ids`` has its prompt encoded alone
    and those ids appended, so the loss scores the tokens a rollout sampled even where
    the tokenizer would split their text differently. Rows are padded on the right.

    Raises:
        ConfigError: If the reply's tokens do not close the tokenised sequence (a chat
            template or tokenizer that merges across the prompt/reply boundary).
    """
    torch = require("torch", "models", _PURPOSE)
    if any(t.reply_ids is not None and not t.reply_ids for t in turns):
        raise ConfigError("a sampled reply without tokens has nothing to score")
    conversations = [t.conversation for t in turns]
    texts, images, videos, metas, _ = prepare_conversations(processor, conversations)
    full = [
        text if t.reply_ids is not None else text + t.reply + END_OF_TURN
        for text, t in zip(texts, turns, strict=True)
    ]
    batch = encode(processor, full, images, videos, metas, padding_side="right")
    tok = processor.tokenizer
    if any(t.reply_ids is not None for t in turns):
        appended = [list(t.reply_ids or ()) for t in turns]
        batch = _append_tokens(torch, batch, appended, tok.pad_token_id or 0)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    labels = torch.full_like(ids, -100)
    for row, turn in enumerate(turns):
        reply_ids = turn.loss_ids(tok)
        length = int(mask[row].sum())
        start = length - len(reply_ids)
        if start <= 0 or ids[row, start:length].tolist() != list(reply_ids):
            raise ConfigError("the reply's tokens do not end the sequence; check the chat template")
        labels[row, start:length] = ids[row, start:length]
    out = dict(batch)
    out["labels"] = labels
    return out


def _append_tokens(
    torch: Any, batch: Any, appended: Sequence[Sequence[int]], pad_id: int
) -> dict[str, Any]:
    """``batch`` (right-padded) with ``appended[row]`` text tokens after each row's last.

    The per-token tensors (:data:`_PER_TOKEN`) are widened; the appended positions are
    attended text tokens (token type 0).

    Raises:
        ConfigError: If the processor gave a per-token tensor not known here (it could
            not be widened correctly).
    """
    ids, mask = batch["input_ids"], batch["attention_mask"]
    lengths = [int(n) for n in mask.sum(1)]
    width = max(n + len(a) for n, a in zip(lengths, appended, strict=True))
    out = dict(batch)
    for key, value in batch.items():
        if not hasattr(value, "shape") or tuple(value.shape) != tuple(ids.shape):
            continue
        if key not in _PER_TOKEN:
            raise ConfigError(f"cannot append sampled tokens beside the processor's {key!r}")
        fill = pad_id if key == "input_ids" else 0
        widened = torch.full((ids.shape[0], width), fill, dtype=value.dtype)
        for row, (n, extra) in enumerate(zip(lengths, appended, strict=True)):
            widened[row, :n] = value[row, :n]
            if key == "input_ids":
                widened[row, n : n + len(extra)] = torch.tensor(extra, dtype=value.dtype)
            elif key == "attention_mask":
                widened[row, n : n + len(extra)] = 1
        out[key] = widened
    return out
