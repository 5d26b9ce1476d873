"""Guided decoding for transformers' ``generate``: a :class:`ReplyGuide` as a logits processor.

Each step, the reply so far is decoded; while the guide is in its guided part, every token
whose text would leave the guide's paths gets ``-inf`` (at the end of a closed head only
end-of-sequence tokens remain). The token texts are decoded once per tokenizer. Token
texts are concatenated as decoded alone, which is exact for byte-level BPE tokenizers
(Qwen's) on ASCII continuations, as the guides here are.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from video_env.backends.base import ReplyGuide

__all__ = ["GuideLogitsProcessor", "token_texts"]


@lru_cache(maxsize=4)
def token_texts(tokenizer: Any) -> dict[str, list[tuple[int, str]]]:
    """Every token id with its text decoded alone, by the text's first character.

    Cached per tokenizer object (a vocabulary of 150k tokens takes a few seconds).
    """
    index: dict[str, list[tuple[int, str]]] = {}
    for i in range(len(tokenizer)):
        text = tokenizer.decode([i])
        if text:
            index.setdefault(text[0], []).append((i, text))
    return index


class GuideLogitsProcessor:
    """Masks the scores of tokens that leave ``guide`` (one guide for the whole batch).

    Args:
        guide: The reply's guide.
        tokenizer: The model's tokenizer.
        prompt_length: Tokens of the (padded) prompt: the reply starts after them.
        eos_ids: The tokens that end a reply.
    """

    def __init__(
        self, guide: ReplyGuide, tokenizer: Any, prompt_length: int, eos_ids: Iterable[int]
    ) -> None:
        self.guide = guide
        self.tokenizer = tokenizer
        self.prompt_length = prompt_length
        self.eos_ids = sorted(set(eos_ids))
        self.texts = token_texts(tokenizer)

    def allowed(self, reply: str) -> list[int] | None:
        """The token ids allowed after ``reply`` (``None``: any)."""
        state, tail = self.guide.state(reply)
        if state == "free":
            return None
        if state == "end" or tail is None:
            return self.eos_ids
        heads = (*self.guide.closed, *self.guide.open)
        nexts = {h[len(tail)] for h in heads if h.startswith(tail) and len(h) > len(tail)}
        allowed = [
            i
            for char in nexts
            for i, text in self.texts.get(char, ())
            if self.guide.allows(tail + text)
        ]
        return allowed or None  # a tokenizer that cannot spell the heads: left free

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        """The scores with every token outside the guide's paths at ``-inf``."""
        import torch

        for row in range(input_ids.shape[0]):
            reply = self.tokenizer.decode(
                input_ids[row, self.prompt_length :], skip_special_tokens=True
            )
            allowed = self.allowed(reply)
            if allowed is None:
                continue
            keep = torch.full_like(scores[row], float("-inf"))
            index = torch.tensor(allowed, device=scores.device)
            keep[index] = scores[row, index]
            scores[row] = keep
        return scores
