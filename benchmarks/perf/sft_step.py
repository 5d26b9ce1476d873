"""An SFT step of the pixel VLM on VideoScout turns, against its FLOP bound.

Run: ``python -m benchmarks.perf.sft_step [--videos 4] [--steps 3] [--batch 2]``

The setting of the laboratory's format test (``experiments/tests/test_pixel_vlm_sft.py``):
the shipped pixel VLM, its vision blocks frozen, trained on the Think-Act turns of a
scripted teacher on the pixel world's first ``--videos`` training videos (the library's
ground-truth teacher: its rows have the test's shapes), four frames of 112x56 a window,
``--batch`` turns a step. It prints a row's positions (and how many of
them are the system prompt every row shares), the step's FLOPs counted by torch
(``torch.utils.flop_counter``, forward and backward, taught the CPU attention
kernels it does not count: :func:`count_cpu_attention`), the seconds a step takes through the
library's collator, and the ratio to the bound: the step's FLOPs at the machine's measured
float32 matrix-product rate on the same threads
(:func:`~benchmarks.perf.scout_flops.matmul_rate`). The last line scales both to the
test's turns and epochs, with the load average (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.perf.scout_flops import matmul_rate
from video_env.envs.pacing_rules import PacingRules, SpeedSpec

#: The format test's small windows: four frames of 112x56 (two of them at 4x).
SMALL = PacingRules(
    speeds={1: SpeedSpec(4, 112, 1, 56), 2: SpeedSpec(4, 112, 2, 56), 4: SpeedSpec(2, 112, 4, 56)},
    rewatch=SpeedSpec(4, 112, 1, 56),
)


def count_cpu_attention(torch: Any) -> None:
    """Teach ``FlopCounterMode`` the CPU flash-attention kernels (it counts none of them).

    The work counted is the share of the scores a step must compute: causal or under a
    mask (the language model's causal-and-padding mask), half; else all (torch's own
    formulas for the GPU kernels count all).
    """
    from torch.utils import flop_counter

    aten = torch.ops.aten
    forward = aten._scaled_dot_product_flash_attention_for_cpu
    if forward in flop_counter.flop_registry:
        return

    def share(is_causal: bool, attn_mask: Any) -> float:  # the formulas see shapes only
        return 0.5 if is_causal or attn_mask is not None else 1.0

    @flop_counter.register_flop_formula(forward)
    def _forward(query: Any, key: Any, value: Any, dropout_p: float = 0.0,
                 is_causal: bool = False, *, attn_mask: Any = None, **_: Any) -> int:  # fmt: skip
        full = flop_counter.sdpa_flop_count(query, key, value)  # type: ignore[no-untyped-call]
        return int(full * share(is_causal, attn_mask))

    backward = aten._scaled_dot_product_flash_attention_for_cpu_backward

    @flop_counter.register_flop_formula(backward)
    def _backward(grad_out: Any, query: Any, key: Any, value: Any, out: Any, logsumexp: Any,
                  dropout_p: float = 0.0, is_causal: bool = False, *, attn_mask: Any = None,
                  **_: Any) -> int:  # fmt: skip
        full = flop_counter.sdpa_backward_flop_count(  # type: ignore[no-untyped-call]
            grad_out, query, key, value
        )
        return int(full * share(is_causal, attn_mask))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=4, help="training videos (the test's 4)")
    parser.add_argument("--steps", type=int, default=3, help="steps timed (after one warm-up)")
    parser.add_argument("--batch", type=int, default=2, help="turns a step (the test's 2)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs to scale to (the test's 3)")
    parser.add_argument(
        "--turns",
        type=int,
        default=106,
        help="turns an epoch to scale to (the test's frame teacher: 106)",
    )
    args = parser.parse_args(argv)

    import torch
    import transformers
    from torch.utils.flop_counter import FlopCounterMode

    from policies.training.cli_common import split_samples
    from policies.training.distill import DistillConfig, distill
    from policies.training.provenance import freeze_vision_blocks
    from policies.training.sft import TurnCollator, load_turns
    from policies.training.teachers import GroundTruthScriptedTeacher
    from video_env.backends.torch_threads import apply_threads
    from video_env.pixel import PIXEL_VLM_DIR

    threads = apply_threads(torch)
    count_cpu_attention(torch)
    with tempfile.TemporaryDirectory() as tmp:
        config = DistillConfig(tries=1).with_episode(rules=SMALL)
        distill(GroundTruthScriptedTeacher(), split_samples("train", args.videos), tmp, config)
        rows = load_turns(Path(tmp) / "turns.jsonl", None, 0)
        processor = transformers.AutoProcessor.from_pretrained(str(PIXEL_VLM_DIR))  # type: ignore[no-untyped-call]
        model = transformers.AutoModelForImageTextToText.from_pretrained(
            str(PIXEL_VLM_DIR), dtype="float32"
        )
        freeze_vision_blocks(model)
        collator = TurnCollator(processor, None)
        batches = [
            collator([rows[(i * args.batch + j) % len(rows)] for j in range(args.batch)])
            for i in range(args.steps + 1)
        ]
        system = processor.apply_chat_template(
            [rows[0]["prompt"][0]], tokenize=True, return_dict=True
        )["input_ids"]

        def step(batch: dict[str, torch.Tensor]) -> None:
            labels = batch["labels"]
            logits = model(**{k: v for k, v in batch.items() if k != "labels"}).logits
            loss = torch.nn.functional.cross_entropy(
                logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(), ignore_index=-100
            )
            loss.backward()  # type: ignore[no-untyped-call]
            model.zero_grad(set_to_none=True)

        with FlopCounterMode(display=False) as counter:
            step(batches[0])
        flops = counter.get_total_flops()
        start = time.perf_counter()
        for batch in batches[1:]:
            step(batch)
        seconds = (time.perf_counter() - start) / args.steps
    rate = matmul_rate(torch)
    bound = flops / rate
    positions = int(batches[0]["input_ids"].shape[1])
    steps = -(-args.turns // args.batch) * args.epochs
    print(f"torch threads {threads}, load average {os.getloadavg()[0]:.2f}")
    print(f"turns {len(rows)}; a row {positions} positions, {len(system[0])} of them the shared "
          f"system prompt")  # fmt: skip
    print(f"a step of {args.batch} turns: {flops / 1e9:.1f} GFLOP, {seconds:.2f} s; "
          f"bound {bound:.2f} s at {rate / 1e9:.0f} GFLOP/s (x{seconds / bound:.2f})")  # fmt: skip
    print(f"{args.turns} turns x {args.epochs} epochs = {steps} steps: "
          f"{steps * flops / 1e12:.1f} TFLOP, about {steps * seconds:.0f} s, "
          f"bound {steps * bound:.0f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
