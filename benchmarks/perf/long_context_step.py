"""Seconds of an SFT step of the pixel VLM as its sequences grow to a TRL tool chat's length.

Run: ``python -m benchmarks.perf.long_context_step [--lengths 3300 8192 14401 20000]``

A TRL row on the pixel VLM needs an SFT on whole episodes written as tool chats: the
lead teacher's validation episodes take a median of 14,401 positions and at most 19,266
(docs/training.md, "Held-out test videos"), where a VideoScout Think-Act turn takes about
3,300 and the model was built for 8,192. This raises the model's
``max_position_embeddings`` to the longest length asked (a config change: its positions
are M-RoPE), then times the forward and backward pass of one sequence of random text
tokens at each length (the minimum over ``--repeats``, after one untimed pass at the
first length) and prints the seconds and their ratio to the first length's. Text tokens
only: the frames' vision-tower pass, whose cost grows with the frames and not with the
context, is left out, so the seconds are a lower bound on a tool chat's step.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from video_env.pixel import PIXEL_VLM_DIR


def step_seconds(model: Any, length: int, repeats: int) -> float:
    """The minimum seconds of a forward and backward pass over ``length`` random tokens."""
    import torch

    vocab = model.config.get_text_config().vocab_size
    ids = torch.randint(0, vocab, (1, length), generator=torch.Generator().manual_seed(length))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        model(input_ids=ids, labels=ids).loss.backward()
        best = min(best, time.perf_counter() - start)
        model.zero_grad(set_to_none=True)
    return best


def main(argv: Sequence[str] | None = None) -> int:
    """Print the seconds of a step at each length and their ratio to the first length's."""
    import transformers

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(PIXEL_VLM_DIR))
    parser.add_argument("--lengths", type=int, nargs="+", default=[3300, 8192, 14401, 20000])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    config = transformers.AutoConfig.from_pretrained(args.model, local_files_only=True)
    text = config.get_text_config()
    built_for = text.max_position_embeddings
    text.max_position_embeddings = max(built_for, *args.lengths)
    load = transformers.AutoModelForImageTextToText.from_pretrained
    model = load(args.model, config=config, local_files_only=True)
    model.train()
    step_seconds(model, args.lengths[0], 1)  # warm-up
    longest = text.max_position_embeddings
    print(f"{args.model}: built for {built_for:,} positions, run at up to {longest:,}; "
          "one sequence of text tokens, forward + backward")  # fmt: skip
    first: float | None = None
    for length in args.lengths:
        seconds = step_seconds(model, length, args.repeats)
        if first is None:
            first = seconds
        print(f"{length:>7,} positions: {seconds:7.2f} s a step, {seconds / first:5.1f}x "
              f"the {args.lengths[0]:,}-position step")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
