"""Format-guided decoding's masks: the grammar engine against trying every token.

Run: ``python -m benchmarks.perf.format_guide [--vocab 150000] [--repeats 3]``

For VideoScout's Think-Act pattern (``policies.videoscout.think_act_pattern``) and a teacher-like
reply, replays the reply token by token and times each step's mask two ways, in the same
run, over two tokenizers: the pixel VLM's own (1,024 tokens) and a byte-level BPE trained
here on the Python standard library's sources to about ``--vocab`` tokens (Qwen2.5's has
151,665; none can be downloaded here).

- baseline: what the transformers backend did before xgrammar, and still does for guides
  of literal heads: decode the reply, then keep each token whose text leaves the reply on
  a prefix of a match (``ReplyGuide.allows``, the ``regex`` package's partial matching);
- engine: :class:`~video_env.backends.hf_pattern_guide.PatternMasks` (xgrammar: one
  matcher per row, advanced a token a step, and a bitmask applied to the scores).

Prints the one-time cost (the baseline's index of token texts; the engine's compiler and
its compilation of the pattern; then the engine's compilation of another turn's pattern,
with other legal actions, by the same compiler), the mean CPU time per step (best of
``--repeats``), their ratio, and the steps where the two allowed sets differ (tokens whose
text is not ASCII are left out of the comparison: the baseline joins decoded texts, exact
on ASCII only).
"""

from __future__ import annotations

import argparse
import functools
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from policies.videoscout.think_act_pattern import DEFAULT_MAX_CHARS, think_act_pattern
from video_env.backends.base import ReplyGuide
from video_env.backends.hf_guide import token_texts
from video_env.backends.hf_pattern_guide import PatternMasks, compile_pattern
from video_env.backends.testing import tiny_qwen_tokenizer

ACTIONS = [
    "<action>speed(1x)</action>",
    "<action>speed(2x)</action>",
    "<action>speed(4x)</action>",
    "<action>rewatch(1)</action>",
    *(f'<action>answer("{letter}")</action>' for letter in "ABCD"),
]
REPLY = (
    "<think>Beach at 2x. The balloon is not here yet; the frames show sand, a towel and "
    "the sea. Keep skimming.</think><memory>Seen: beach (0-40 s), no balloon.</memory>"
    "<action>speed(2x)</action>"
)
CORPUS_CHARS = 40_000_000


def stdlib_tokenizer(vocab: int) -> Any:
    """A byte-level BPE of about ``vocab`` tokens, trained on the standard library's sources."""
    texts, size = [], 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
        size += len(texts[-1])
        if size > CORPUS_CHARS:
            break
    return tiny_qwen_tokenizer(vocab_size=vocab, corpus=texts)


def baseline_scores(guide: ReplyGuide, tokenizer: Any, ids: list[int], scores: Any) -> Any:
    """``scores`` masked after ``ids`` by trying every token's text against the pattern.

    As the backend's processor did for patterns: the allowed ids, then a ``-inf`` row
    with their scores.
    """
    import torch

    reply = tokenizer.decode(ids, skip_special_tokens=True)
    _, tail = guide.state(reply)
    allowed = [
        i for group in token_texts(tokenizer).values() for i, text in group
        if guide.allows((tail or "") + text)
    ]  # fmt: skip
    keep = torch.full_like(scores[0], float("-inf"))
    index = torch.tensor(allowed, dtype=torch.long)
    keep[index] = scores[0, index]
    scores[0] = keep
    return scores


def engine_scores(masks: PatternMasks, ids: list[int], scores: Any) -> Any:
    """``scores`` masked by the grammar engine after ``ids`` (one row)."""
    import torch

    return masks(torch.tensor([ids], dtype=torch.long), scores)


def replay(
    step: Callable[[list[int], Any], Any], ids: list[int], vocab_size: int
) -> tuple[float, list[set[int]]]:
    """CPU seconds of ``step`` over every prefix of ``ids``, and the tokens it allowed.

    Only the masking is timed (not the zero scores it starts from, nor reading the sets).
    """
    import torch

    seconds, masked = 0.0, []
    for k in range(len(ids)):
        scores = torch.zeros(1, vocab_size)
        start = time.process_time()
        masked.append(step(ids[:k], scores))
        seconds += time.process_time() - start
    return seconds, [set(torch.nonzero(m[0] > float("-inf")).flatten().tolist()) for m in masked]


def measure(name: str, tokenizer: Any, repeats: int) -> None:
    """Print one tokenizer's row."""
    guide = ReplyGuide("", patterns=(think_act_pattern(ACTIONS, open_answer=False,
                                                       max_chars=DEFAULT_MAX_CHARS),))  # fmt: skip
    ids = tokenizer(REPLY, add_special_tokens=False)["input_ids"]
    eos = [int(tokenizer.eos_token_id)]
    vocab_size = len(tokenizer)
    start = time.process_time()
    token_texts(tokenizer)
    base_once = time.process_time() - start
    start = time.process_time()
    compile_pattern(tokenizer, guide.regex(), vocab_size, eos)
    engine_once = time.process_time() - start
    start = time.process_time()  # a turn with other legal actions: another pattern, same compiler
    other = think_act_pattern(ACTIONS[:2], open_answer=True, max_chars=DEFAULT_MAX_CHARS)
    compile_pattern(tokenizer, other, vocab_size, eos)
    engine_next = time.process_time() - start
    base_s, engine_s = float("inf"), float("inf")
    for _ in range(repeats):
        baseline = functools.partial(baseline_scores, guide, tokenizer)
        seconds, base_sets = replay(baseline, ids, vocab_size)
        base_s = min(base_s, seconds)
        masks = PatternMasks(guide, tokenizer, eos)  # a fresh matcher: the replay starts over
        seconds, engine_sets = replay(functools.partial(engine_scores, masks), ids, vocab_size)
        engine_s = min(engine_s, seconds)
    ascii_ids = {i for i in range(vocab_size) if tokenizer.decode([i]).isascii()}
    differ = sum(b != (e & ascii_ids) for b, e in zip(base_sets, engine_sets, strict=True))
    steps = len(ids)
    print(
        f"| {name} | {vocab_size:,} | {steps} | {base_once:.2f} | {engine_once:.2f} | "
        f"{engine_next:.2f} | "
        f"{1e3 * base_s / steps:.2f} | {1e3 * engine_s / steps:.3f} | "
        f"{base_s / engine_s:.0f}x | {differ} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, default=150_000, help="the large tokenizer's size")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many replays")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    pixel = AutoTokenizer.from_pretrained(
        str(Path(__file__).resolve().parents[2] / "video_env/pixel/vlm_weights")
    )
    print(
        "| tokenizer | vocabulary | steps | baseline once (s) | engine once (s) | "
        "engine, next pattern (s) | "
        "baseline ms/step | engine ms/step | speed-up | steps that differ |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    measure("pixel VLM", pixel, args.repeats)
    measure("stdlib BPE", stdlib_tokenizer(args.vocab), args.repeats)


if __name__ == "__main__":
    main()
