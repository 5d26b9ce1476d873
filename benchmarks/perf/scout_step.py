"""VideoScout's chat call and DAPO step before and after issue 72's speed-ups, against FLOP bounds.

Run: ``python -m benchmarks.perf.scout_step [--size tiny|realistic] [--group 8] [--turns 4]``

``--size realistic`` is the call the issue measured: a random Qwen2.5-VL with the shipped
pixel VLM's widths and depths, 20 frames at 504x280 (1,800 visual tokens) in a prompt of
3,266 tokens, 59 new tokens (``tiny``, the default, is a seconds-long smoke run). Both
paths are the library's, in one process, on the same weights and inputs:

- ``before``: the old behaviour through settings: torch's default threads (one per
  core), no vision cache (``vision_cache_mb=0``), per-token scores computed
  (``logprobs=True``), each rollout's first turn its own call (``share_first_turn=False``);
- ``after``: the defaults: threads for the free cores, the vision cache, no scores, a
  group's identical first turn as one call of G rows, the cache shared by the rollouts,
  the reference and the policy (``freeze_vision``, as the pixel VLM recipe trains).

It times (wall seconds) one chat call (after: its first call, and a rewatch of the same
frames), a group's first turn (G rollouts), and one DAPO step on synthetic rollouts (G
trajectories of ``--turns`` turns: the first turn shared, each later turn a window all
rollouts see with a memory text of its own), by phase; after with beta = 0 too (no
reference). Each line prints its ratio to its FLOP bound (:mod:`.scout_flops`: the work the
line must do, at the machine's measured matrix-product rate on the same threads) and
the speed-up over before, with the load average (the machine is shared).
"""

from __future__ import annotations

import argparse
import importlib
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.perf.scout_flops import SIZES, Flops, build_model, matmul_rate
from video_env.backends.base import FrameBatch
from video_env.video.base import Size

QUESTION = "Which object does the person hold when the clock shows noon?"


def frames(index: int, spec: tuple[int, int, int]) -> FrameBatch:
    """A batch of random frames (the pixels given: no video is decoded)."""
    n, width, height = spec
    pixels = np.random.default_rng(index).integers(0, 256, (n, height, width, 3), dtype=np.uint8)
    times = np.arange(n, dtype=np.float64) + 60.0 * index
    return FrameBatch(None, times, Size(width, height), [pixels])  # type: ignore[arg-type]


def grid(spec: tuple[int, int, int]) -> tuple[int, int, int]:
    n, width, height = spec
    return (max(1, n // 2), height // 14, width // 14)


def filler(processor: Any, tokens: int, seed: int) -> str:
    """A text of about ``tokens`` tokens."""
    words = ("red", "room", "blue", "door", "clock", "sign", "person", "walks", "green", "car")
    rng = np.random.default_rng(seed)
    text = " ".join(words[i] for i in rng.integers(0, len(words), tokens))
    ids = processor.tokenizer(text)["input_ids"][: max(1, tokens)]
    return str(processor.tokenizer.decode(ids))


def messages(processor: Any, spec: dict[str, Any], window: int, memory: int) -> list[Any]:
    """One turn's chat: a text of the size that fills the prompt, the window's frames."""
    _, width, height = spec["frames"]
    visual = grid(spec["frames"])[0] * (height // 28) * (width // 28)
    text = filler(processor, max(8, spec["prompt_tokens"] - visual - 75), memory)
    return [{"role": "user", "content": [text, frames(window, spec["frames"]), QUESTION]}]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def line(label: str, seconds: float, bound: float, before: float | None = None) -> None:
    gain = f"  {before / seconds:5.2f}x faster than before" if before else ""
    print(f"  {label:<34} {seconds:8.2f} s   {seconds / bound:6.2f}x its bound{gain}")


def chat_calls(folder: Path, spec: dict[str, Any], flops: Flops, rate: float, args: Any) -> None:
    from video_env.backends.transformers_vlm import TransformersVLM

    new = spec["new_tokens"]
    before_vlm = TransformersVLM(str(folder), device="cpu", threads=args.default_threads,
                                 vision_cache_mb=0)  # fmt: skip
    transformers: Any = importlib.import_module("transformers")
    turn = messages(transformers.AutoProcessor.from_pretrained(folder), spec, 0, 0)
    calls = {"max_new_tokens": new, "temperature": 0.0}
    before = min(timed(lambda: before_vlm.chat(turn, logprobs=True, **calls))[0] for _ in "ab")
    group_before, _ = timed(lambda: [before_vlm.chat(turn, logprobs=True, **calls)
                                     for _ in range(args.group)])  # fmt: skip
    reply = before_vlm.chat(turn, **calls)
    vlm = TransformersVLM(str(folder), device="cpu")
    cache = vlm.vision_cache
    if cache is None:
        raise SystemExit("the vision cache is off: the after path needs it")
    first = []
    for _ in "ab":
        cache.clear()
        first.append(timed(lambda: vlm.chat(turn, **calls))[0])
    rewatch = min(timed(lambda: vlm.chat(turn, **calls))[0] for _ in "ab")
    cache.clear()
    group_after, _ = timed(lambda: vlm.chat_n(turn, args.group, **calls))
    vision = flops.vision([grid(spec["frames"])])
    prompt = reply.prompt_tokens
    prefill, decode = flops.prefill(prompt), flops.decode(prompt, new)
    print(f"chat call: {prompt} prompt tokens, frames {spec['frames'][0]} at "
          f"{spec['frames'][1]}x{spec['frames'][2]}, {reply.completion_tokens} new tokens; "
          f"bound: vision {vision / 1e9:.1f} + prefill {prefill / 1e9:.1f} GFLOP, decode "
          f"{decode / new / 1e6:.1f} MFLOP per token")  # fmt: skip
    print(f"  threads: before {args.default_threads} (torch's default), after {vlm.threads} "
          f"(free cores)")  # fmt: skip
    line("before", before, (vision + prefill + decode) / rate)
    line("after, first call", min(first), (vision + prefill + decode) / rate, before)
    line("after, rewatch (vision cached)", rewatch, (prefill + decode) / rate, before)
    group_bound = (vision + prefill + args.group * decode) / rate
    print(f"a group's first turn ({args.group} rollouts):")
    line(f"before ({args.group} calls)", group_before, group_bound)
    line("after (one prefill, rows together)", group_after, group_bound, group_before)


def dapo_variant(folder: Path, spec: dict[str, Any], args: Any, *, after: bool,
                 beta: float) -> dict[str, float]:  # fmt: skip
    """One DAPO step on synthetic rollouts; the seconds of each phase."""
    from policies.training.dapo import DAPOSettings
    from policies.training.dapo_step import dapo_step
    from policies.training.group_chat import SharedTurnChat
    from policies.training.provenance import freeze_vision_blocks
    from policies.training.rl_speed import speed_up
    from policies.training.rollout import PolicyChat, Trajectory

    torch: Any = importlib.import_module("torch")
    transformers: Any = importlib.import_module("transformers")
    torch.set_num_threads(args.default_threads)
    load = transformers.AutoModelForImageTextToText.from_pretrained
    processor = transformers.AutoProcessor.from_pretrained(folder)
    model = load(folder)
    freeze_vision_blocks(model)
    reference = load(folder).eval().requires_grad_(False) if beta > 0 else None
    if after:
        speed_up(torch, model, reference, 512)
    chat = PolicyChat(model, processor, share_first_turn=after)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-6)
    torch.manual_seed(0)
    start = time.perf_counter()
    caller: Any = SharedTurnChat(chat) if after else chat
    if after:
        caller.expect(args.group)
    group = []
    for i in range(args.group):
        turns = []
        for t in range(args.turns):
            chat_turn = messages(processor, spec, t, 0 if t == 0 else 1000 * i + t)
            reply = caller.chat(chat_turn, max_new_tokens=spec["new_tokens"], temperature=1.0)
            turns.append(chat.example(chat_turn, reply.text, None, reply.token_ids))
        group.append(Trajectory(turns, reward=float(i % 2), record={}))
    rollout = time.perf_counter() - start
    totals = dapo_step(model, reference, processor, optimizer, [group], DAPOSettings(beta=beta),
                       temperature=1.0)  # fmt: skip
    phases = {
        "rollouts": rollout,
        **{k.removesuffix("_s"): totals[k] for k in ("reference_s", "forward_s", "backward_s")},
    }
    phases["step"] = time.perf_counter() - start
    return phases


def dapo_steps(folder: Path, spec: dict[str, Any], flops: Flops, rate: float, args: Any) -> None:
    g, turns, new = args.group, args.turns, spec["new_tokens"]
    prompt = spec["prompt_tokens"]
    vision = turns * flops.vision([grid(spec["frames"])])
    prefills = (1 + g * (turns - 1)) * flops.prefill(prompt)
    decodes = g * turns * flops.decode(prompt, new)
    forward = g * turns * flops.forward(prompt + new, new)
    bounds = {"rollouts": vision + prefills + decodes, "reference": forward,
              "forward": forward, "backward": 2 * forward}  # fmt: skip
    before = dapo_variant(args.folder, spec, args, after=False, beta=0.01)
    after = dapo_variant(args.folder, spec, args, after=True, beta=0.01)
    no_ref = dapo_variant(args.folder, spec, args, after=True, beta=0.0)
    print(f"a DAPO step: {g} rollouts x {turns} turns ({g * turns} turns), freeze_vision; "
          f"bound {sum(bounds.values()) / 1e9:.0f} GFLOP with the reference pass")  # fmt: skip
    for phase in ("rollouts", "reference", "forward", "backward"):
        print(f"  {phase:<10} before {before[phase]:7.2f} s  after {after[phase]:7.2f} s  "
              f"bound {bounds[phase] / rate:6.2f} s")  # fmt: skip
    total_bound = sum(bounds.values()) / rate
    line("step before", before["step"], total_bound)
    line("step after", after["step"], total_bound, before["step"])
    line("step after, beta = 0 (no reference)", no_ref["step"],
         (total_bound - bounds["reference"] / rate), before["step"])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    parser.add_argument("--group", type=int, default=8, help="rollouts per group (G)")
    parser.add_argument("--turns", type=int, default=4, help="turns per rollout in the step")
    parser.add_argument("--workdir", type=Path, help="where to build the model (default: temp)")
    args = parser.parse_args()
    import torch

    from video_env.backends.torch_threads import choose_threads, usable_cores

    args.default_threads = torch.get_num_threads()
    spec = SIZES[args.size]
    print(f"scout_step --size {args.size}: {usable_cores()} usable cores, load average "
          f"{load_average()} at the start")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        args.folder = build_model((args.workdir or Path(tmp)) / f"scout-{args.size}", args.size)
        import transformers

        flops = Flops(transformers.AutoConfig.from_pretrained(args.folder))
        torch.set_num_threads(choose_threads())
        rate = matmul_rate(torch)
        print(f"matrix products: {rate / 1e9:.1f} GFLOP/s on {torch.get_num_threads()} "
              f"thread(s) (the bounds' rate)")  # fmt: skip
        chat_calls(args.folder, spec, flops, rate, args)
        dapo_steps(args.folder, spec, flops, rate, args)
    print(f"load average {load_average()} at the end")


if __name__ == "__main__":
    main()
