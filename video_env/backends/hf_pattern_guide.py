"""Pattern guides for transformers' ``generate``: token masks from a grammar engine (xgrammar).

A :class:`~video_env.backends.base.ReplyGuide` with patterns keeps the whole reply to one
regular expression (VideoScout's format-guided decoding). Trying every token of the
vocabulary against the pattern at each step costs O(vocabulary × reply) — about half a
second a step with a 141k-token vocabulary (``benchmarks/perf/format_guide.py``).
xgrammar, the engine vLLM and SGLang use for structured outputs, compiles the pattern
once per tokenizer and keeps one matcher per row that advances token by token; a step's
mask then costs about a millisecond. It reads token ids as bytes, so it is exact for any
byte-level tokenizer (the text-joining processor of ``hf_guide`` is exact on ASCII only).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from video_env._optional import require
from video_env.backends.base import ReplyGuide

__all__ = ["PatternMasks", "compile_pattern", "grammar_compiler", "pattern_masked_logits"]

_PURPOSE = "format-guided decoding (reply patterns)"

# compilers per tokenizer, keyed by (logits width, stop tokens): one per model in practice
_COMPILERS: weakref.WeakKeyDictionary[Any, dict[tuple[int, tuple[int, ...]], Any]] = (
    weakref.WeakKeyDictionary()
)


def grammar_compiler(tokenizer: Any, vocab_size: int, eos_ids: Sequence[int]) -> Any:
    """The grammar engine's compiler for ``tokenizer``, logits of ``vocab_size`` (cached).

    Building it reads the whole vocabulary (about a second for 150k tokens); each
    compiler caches the grammars it compiled.

    Raises:
        BackendNotInstalled: Without xgrammar (the ``models`` extra).
    """
    xgr = require("xgrammar", "models", _PURPOSE)
    key = (vocab_size, tuple(sorted(set(eos_ids))))
    by_key = _COMPILERS.setdefault(tokenizer, {})
    if key not in by_key:
        info = xgr.TokenizerInfo.from_huggingface(
            tokenizer, vocab_size=vocab_size, stop_token_ids=list(key[1])
        )
        by_key[key] = xgr.GrammarCompiler(info)
    return by_key[key]


def compile_pattern(tokenizer: Any, regex: str, vocab_size: int, eos_ids: Sequence[int]) -> Any:
    """``regex`` compiled for ``tokenizer`` (cached by its compiler).

    Raises:
        ValueError: When the engine cannot read the pattern (a look-around, say).
    """
    compiler = grammar_compiler(tokenizer, vocab_size, eos_ids)
    try:
        return compiler.compile_regex(regex)
    except RuntimeError as err:  # xgrammar's parse errors
        raise ValueError(f"the grammar engine cannot read the pattern: {err}") from err


def pattern_masked_logits(
    logits: Any, tokenizer: Any, regex: str, reply_ids: Sequence[int], eos_ids: Sequence[int]
) -> Any:
    """``logits`` of a reply's positions with the tokens its pattern forbade at ``-inf``.

    Row ``j`` holds the logits that predicted ``reply_ids[j]``; it is masked to the tokens
    the pattern allows after ``reply_ids[:j]`` — the distribution a format-guided rollout
    sampled from. A rollout's sampled ids are all allowed, so they are masked throughout
    (a reply cut by the token cap included: it has no end token). Masking stops at the
    first token the pattern refuses (a text reply, re-tokenized with an end-of-turn token
    appended, can have one): from there the rows stay free, so no reply token gets
    probability 0. Out of place (the forbidden tokens get ``-inf`` added, on
    the logits' device), so gradients flow through the kept logits.

    Args:
        logits: ``float[n, vocab]``.
        tokenizer: The model's tokenizer.
        regex: The pattern the reply was sampled under.
        reply_ids: The ``n`` reply tokens (the end token last if the reply ended).
        eos_ids: The tokens that end a reply.

    Raises:
        ValueError: When the engine cannot read the pattern.
    """
    import torch

    xgr = require("xgrammar", "models", _PURPOSE)
    vocab_size = int(logits.shape[-1])
    matcher = xgr.GrammarMatcher(compile_pattern(tokenizer, regex, vocab_size, eos_ids))
    bitmask = xgr.allocate_token_bitmask(len(reply_ids), vocab_size)
    kept = 0
    for j, token in enumerate(reply_ids):
        if matcher.is_terminated():
            break
        matcher.fill_next_token_bitmask(bitmask, j)
        if not matcher.accept_token(int(token)):
            break
        kept += 1
    if not kept:
        return logits
    forbidden = torch.zeros(kept, vocab_size, dtype=logits.dtype, device=logits.device)
    xgr.apply_token_bitmask_inplace(forbidden, bitmask[:kept].to(logits.device))
    return torch.cat((logits[:kept] + forbidden, logits[kept:]))


class PatternMasks:
    """Masks the scores of tokens that leave a pattern guide, one matcher per row.

    Each call feeds every row's matcher the tokens generated since the last call, then
    sets the scores of the tokens it cannot accept next to ``-inf``. At a full match only
    end-of-sequence tokens remain; a row that has ended keeps them (its scores are not
    used, but must not be all ``-inf``).

    Args:
        guide: A guide with patterns (and no marker or open heads; ``ReplyGuide`` checks).
        tokenizer: The model's tokenizer (a transformers tokenizer).
        eos_ids: The tokens that end a reply.

    Raises:
        ValueError: For a guide without patterns.
    """

    def __init__(self, guide: ReplyGuide, tokenizer: Any, eos_ids: Sequence[int]) -> None:
        self.regex = guide.regex()
        self.tokenizer = tokenizer
        self.eos_ids = list(eos_ids)
        self._grammar: Any = None
        self._matchers: list[Any] = []
        self._fed: list[int] = []

    def __call__(self, replies: Any, scores: Any) -> Any:
        """``scores`` (rows × logits) masked after ``replies`` (rows × tokens so far).

        Raises:
            ValueError: When the engine cannot read the pattern, or a row holds a token
                off the pattern (only a reply generated without these masks can).
        """
        import torch

        xgr = require("xgrammar", "models", _PURPOSE)
        vocab_size = int(scores.shape[-1])
        if self._grammar is None:
            self._grammar = compile_pattern(self.tokenizer, self.regex, vocab_size, self.eos_ids)
        rows = int(scores.shape[0])
        while len(self._matchers) < rows:
            self._matchers.append(xgr.GrammarMatcher(self._grammar))
            self._fed.append(0)
        bitmask = xgr.allocate_token_bitmask(rows, vocab_size)
        guided, ended = [], []
        for row, tokens in enumerate(replies.tolist()):  # one device sync a step
            matcher = self._advance(row, tokens)
            if matcher.is_terminated():
                ended.append(row)
            else:
                matcher.fill_next_token_bitmask(bitmask, row)
                guided.append(row)
        if guided:
            xgr.apply_token_bitmask_inplace(
                scores, bitmask.to(scores.device), vocab_size=vocab_size, indices=guided
            )
        if ended:
            keep = torch.full_like(scores[ended], float("-inf"))
            keep[:, self.eos_ids] = scores[ended][:, self.eos_ids]
            scores[ended] = keep
        return scores

    def _advance(self, row: int, tokens: list[int]) -> Any:
        """Row ``row``'s matcher after the tokens it has not seen yet."""
        matcher = self._matchers[row]
        for token in tokens[self._fed[row] :]:
            if matcher.is_terminated():
                break  # padding after the end of the reply
            if not matcher.accept_token(token):
                raise ValueError(f"token {token} leaves the pattern (row {row})")
        self._fed[row] = len(tokens)
        return matcher
