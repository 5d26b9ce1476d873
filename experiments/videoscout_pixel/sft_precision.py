"""An SFT step on pixel-world VideoScout turns in float32 against bf16 autocast, on the CPU.

Run: ``python -m experiments.videoscout_pixel.sft_precision [--rows 2] [--repeats 3]
[--data TURNS]``

``video-env train sft --bf16`` on a machine without a GPU trains in the Trainer's CPU
autocast (bfloat16 matrix products, float32 master weights). This times the forward and
backward pass of the shipped pixel VLM (vision tower frozen, as ``--freeze-vision``) on
``--rows`` turns of a distilled pixel-world dataset — by default a few turns the terse
frame teacher writes here on one training video under the ``pixel-vlm`` rules — in
float32 and in autocast, alternating which runs first, and prints the minimum seconds
per row of each, their ratio and the loss of both (autocast must not change it much).
The ratio depends on the CPU: bfloat16 is fast where the CPU has ``avx512_bf16`` or AMX
and can be slower where it is emulated; the script prints which flags it saw.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.videoscout_pixel.frame_teacher import FrameScriptedTeacher
from policies.training.cli import RULES, split_samples
from policies.training.distill import DistillConfig, distill
from policies.training.turn_inputs import collate_turns, conversation_from_row


def cpu_flags() -> list[str]:
    """The bfloat16-related CPU flags of this machine (Linux; empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = set(next((ln for ln in text.splitlines() if ln.startswith("flags")), "").split())
    return sorted(flags & {"avx512_bf16", "amx_bf16", "amx_tile", "avx512f"})


def turns_file(folder: Path) -> Path:
    """A few terse-teacher turns of one training video (pixel-vlm rules) in ``folder``."""
    rules = RULES["pixel-vlm"]()
    samples = split_samples("train", 1, limit=2)
    distill(FrameScriptedTeacher(rules, style="terse"), samples, folder,
            DistillConfig(tries=1).with_episode(rules=rules))  # fmt: skip
    return folder / "turns.jsonl"


def step_seconds(model: Any, batch: dict[str, Any], autocast: bool) -> tuple[float, float]:
    """Seconds of one forward and backward pass, and its loss."""
    import torch

    model.zero_grad(set_to_none=True)
    start = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        loss = model(**batch).loss
    loss.backward()
    return time.perf_counter() - start, float(loss.detach())


def main(argv: Sequence[str] | None = None) -> int:
    """Print seconds per row in float32 and in bf16 autocast, and their ratio."""
    import torch
    import transformers

    from policies.training.provenance import freeze_vision_blocks
    from video_env.pixel import PIXEL_VLM_DIR

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2, help="turns per step")
    parser.add_argument("--repeats", type=int, default=3, help="timed pairs")
    parser.add_argument("--data", help="a turns.jsonl (default: distilled here)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.data) if args.data else turns_file(Path(tmp))
        rows = [json.loads(line) for line in path.read_text().splitlines()][: args.rows]
        processor = transformers.AutoProcessor.from_pretrained(PIXEL_VLM_DIR)  # type: ignore[no-untyped-call]
        batch = collate_turns(processor, [conversation_from_row(r) for r in rows])
    model = transformers.AutoModelForImageTextToText.from_pretrained(PIXEL_VLM_DIR)
    freeze_vision_blocks(model)
    model.train()
    tokens = int(batch["attention_mask"].sum()) / len(rows)
    print(f"CPU flags: {', '.join(cpu_flags()) or 'none seen'}; {args.threads} threads")
    print(f"{len(rows)} rows of {tokens:.0f} tokens each (pixel VLM, vision tower frozen)")
    step_seconds(model, batch, False)  # warm-up of both paths
    step_seconds(model, batch, True)
    times: dict[bool, list[float]] = {False: [], True: []}
    losses: dict[bool, float] = {}
    for i in range(args.repeats):
        for autocast in (False, True) if i % 2 == 0 else (True, False):
            seconds, losses[autocast] = step_seconds(model, batch, autocast)
            times[autocast].append(seconds)
    fp32, bf16 = (min(times[a]) / len(rows) for a in (False, True))
    print(f"float32: {fp32:.2f} s a row (loss {losses[False]:.4f})")
    print(f"bf16 autocast: {bf16:.2f} s a row (loss {losses[True]:.4f})")
    print(f"float32 / bf16 autocast: {fp32 / bf16:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
