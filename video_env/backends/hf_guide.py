"""Guided decoding for transformers' ``generate``: a :class:`ReplyGuide` as a logits processor.

A guide with patterns is masked by a grammar engine
(:mod:`video_env.backends.hf_pattern_guide`). For a guide of literal heads, each step the
reply so far is decoded. In the guide's guided part, every token whose text would leave
the guide's paths gets ``-inf`` (at the end of a closed head only end-of-sequence tokens
remain); before it, a token that would complete the guide's marker and go on off the
paths is masked too (a byte-level tokenizer writes ``>`` and ``<`` of
``</memory><action>`` in one token). Token texts are decoded once per tokenizer and
indexed by first character. They are concatenated as decoded alone, which is exact for
byte-level BPE tokenizers (Qwen's) on ASCII continuations, as VideoScout's legal actions
are.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

from video_env.backends.base import ReplyGuide
from video_env.backends.hf_pattern_guide import PatternMasks

__all__ = ["GuideLogitsProcessor", "token_texts"]

_TEXTS: weakref.WeakKeyDictionary[Any, dict[str, list[tuple[int, str]]]] = (
    weakref.WeakKeyDictionary()
)


def token_texts(tokenizer: Any) -> dict[str, list[tuple[int, str]]]:
    """Every token id with its text decoded alone, by the text's first character.

    Kept while the tokenizer lives (a vocabulary of 150k tokens takes a few seconds).
    """
    index = _TEXTS.get(tokenizer)
    if index is None:
        index = {}
        for i in range(len(tokenizer)):
            text = tokenizer.decode([i])
            if text:
                index.setdefault(text[0], []).append((i, text))
        _TEXTS[tokenizer] = index
    return index


_Tokens = list[tuple[int, str]]
_CLOSERS: weakref.WeakKeyDictionary[Any, dict[str, tuple[_Tokens, _Tokens]]] = (
    weakref.WeakKeyDictionary()
)


def marker_closers(tokenizer: Any, after: str) -> tuple[_Tokens, _Tokens]:
    """The tokens that may complete the marker ``after``, and those holding all of it.

    The first are those holding its last character; cached per tokenizer and marker, as
    :func:`token_texts` (a generate call then no longer scans the vocabulary).
    """
    by_marker = _CLOSERS.setdefault(tokenizer, {})
    if after not in by_marker:
        texts = token_texts(tokenizer)
        closers = [(i, t) for group in texts.values() for i, t in group if after[-1:] in t]
        by_marker[after] = closers, [(i, t) for i, t in closers if after and after in t]
    return by_marker[after]


class GuideLogitsProcessor:
    """Masks the scores of tokens that leave ``guide`` (one guide for every row).

    A guide with patterns goes to :class:`~video_env.backends.hf_pattern_guide.PatternMasks`;
    :meth:`allowed` and :meth:`banned` serve guides of literal heads.

    Args:
        guide: The reply's guide.
        tokenizer: The model's tokenizer.
        prompt_length: Tokens of the (left-padded) prompt: every reply starts after them.
        eos_ids: The tokens that end a reply.

    Raises:
        ValueError: Without end-of-sequence tokens (a closed head could never end).
    """

    def __init__(
        self, guide: ReplyGuide, tokenizer: Any, prompt_length: int, eos_ids: Iterable[int]
    ) -> None:
        self.guide = guide
        self.tokenizer = tokenizer
        self.prompt_length = prompt_length
        self.eos_ids = sorted(set(eos_ids))
        if not self.eos_ids:
            raise ValueError("guided decoding needs the model's end-of-sequence tokens")
        self._patterns = PatternMasks(guide, tokenizer, self.eos_ids) if guide.patterns else None
        if self._patterns is None:
            self.texts = token_texts(tokenizer)
            self._closers, self._whole = marker_closers(tokenizer, guide.after)

    def allowed(self, reply: str) -> list[int] | None:
        """The token ids allowed after ``reply`` in the guided part (``None``: not guided).

        Raises:
            ValueError: When no token continues a path (a tokenizer that cannot spell it),
                or for a guide with patterns (masked token by token, in ``__call__``).
        """
        self._refuse_patterns()
        state, tail = self.guide.state(reply)
        if state == "free":
            return None
        if state == "end" or tail is None:
            return self.eos_ids
        chars = self.guide.next_chars(tail) or set()
        groups = (self.texts.get(c, []) for c in chars)
        allowed = [i for group in groups for i, text in group if self.guide.allows(tail + text)]
        if not allowed:
            raise ValueError(f"no token continues the guide after {tail!r}")
        return allowed

    def banned(self, reply: str) -> list[int]:
        """Before the marker: the tokens that would complete it and go on off the paths.

        Raises:
            ValueError: For a guide with patterns (masked token by token, in ``__call__``).
        """
        self._refuse_patterns()
        after = self.guide.after
        if not after or after in reply:
            return []
        partial = any(reply.endswith(after[:k]) for k in range(1, len(after)))
        candidates = self._closers if partial else self._whole
        out = []
        for i, text in candidates:
            state, tail = self.guide.state(reply + text)
            if state == "guided" and tail is not None and not self.guide.allows(tail):
                out.append(i)
        return out

    def _refuse_patterns(self) -> None:
        """Refuse the by-text masks for a guide with patterns.

        Raises:
            ValueError: For a guide with patterns (masked token by token, in ``__call__``).
        """
        if self._patterns is not None:
            raise ValueError("a guide with patterns is masked token by token, not by text")

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        """The scores with every token outside the guide's paths at ``-inf``."""
        import torch

        if self._patterns is not None:
            return self._patterns(input_ids[:, self.prompt_length :], scores)
        for row in range(input_ids.shape[0]):
            reply = self.tokenizer.decode(
                input_ids[row, self.prompt_length :], skip_special_tokens=True
            )
            allowed = self.allowed(reply)
            if allowed is None:
                banned = self.banned(reply)
                if banned:
                    scores[row, torch.tensor(banned, dtype=torch.long)] = float("-inf")
                continue
            keep = torch.full_like(scores[row], float("-inf"))
            index = torch.tensor(allowed, dtype=torch.long, device=scores.device)
            keep[index] = scores[row, index]
            scores[row] = keep
        return scores
