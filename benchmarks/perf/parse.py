"""Parse time of the text action sets against reply length: it must grow linearly.

Run: ``python -m benchmarks.perf.parse [--repeats 3]``

For each registered env kind's text action set (its ``text_action_set()``) and each
adversarial reply kind (the patterns that made
earlier parsers quadratic: unclosed braces, unclosed calls, repeated Think-Act tags, an
unclosed think, nested JSON, bracket soup inside a call, plus a benign long reply), prints
the parse time per KB at 1 KB, 16 KB, 256 KB and 1 MB (CPU time, best of ``--repeats``).
Linear parsing keeps the time per KB flat across a row; the last column is the 1 MB / 1 KB
ratio of the time per KB (the baseline is the 1 KB reply in the same run; ~1 means linear,
the old parsers' ratio grew with the length: quadratic or worse). Every text adapter refuses
replies over 64 KB (the wire's bound) before parsing; these timings are the parser's own.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from typing import Any

from video_env.actions.base import ActionSet
from video_env.actions.parsing import ActionParseError
from video_env.envs import ENV_CLASSES

SIZES = {"1 KB": 2**10, "16 KB": 2**14, "256 KB": 2**18, "1 MB": 2**20}
#: Reply kinds: (prefix, unit repeated after it).
REPLIES = {
    "braces": ("", "{"),
    "unclosed calls": ("", "speed( evaluate( query("),
    "think-act tags": ("<think>", "</think><memory></memory><action></action>"),
    "unclosed think": ("<think>", "let me think about it. "),
    "nested json": ("", '{"action": '),
    "brackets in a call": ("", "answer(" + "([{}])" * 4),
    "prose + action": ("", "The clip shows a person walking. " * 4 + 'answer("B", [10, 20]) '),
}


def action_sets() -> dict[str, ActionSet[Any]]:
    """Each registered env kind's text action set (that of the env built with defaults)."""
    sets = {}
    for kind, env_class in ENV_CLASSES.items():
        env = env_class()
        try:
            sets[kind] = env.text_action_set()
        finally:
            env.close()
    return sets


def reply(prefix: str, unit: str, size: int) -> str:
    """``prefix`` then ``unit`` repeated, to exactly ``size`` characters."""
    return (prefix + unit * (size // len(unit) + 1))[:size]


def parse_seconds(action_set: ActionSet[Any], text: str, repeats: int) -> float:
    """Best CPU time of ``repeats`` lenient parses of ``text``."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()  # CPU time: robust to other load on shared machines
        with contextlib.suppress(ActionParseError):
            action_set.parse(text)
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    header = f"{'env kind':<10} {'reply':<19}" + "".join(f"{s:>10}" for s in SIZES)
    print("parse time per KB (microseconds); ratio = per-KB time at 1 MB / at 1 KB")
    print(header + f"{'ratio':>8}")
    worst = 0.0
    for set_name, action_set in action_sets().items():
        for kind, (prefix, unit) in REPLIES.items():
            per_kb = [
                parse_seconds(action_set, reply(prefix, unit, size), args.repeats)
                / (size / 1024)
                * 1e6
                for size in SIZES.values()
            ]
            ratio = per_kb[-1] / per_kb[0]
            worst = max(worst, ratio)
            cells = "".join(f"{t:10.1f}" for t in per_kb)
            print(f"{set_name:<10} {kind:<19}{cells}{ratio:8.2f}")
    print(f"worst ratio: {worst:.2f} (linear: about 1; a quadratic parser gives about 1000)")


if __name__ == "__main__":
    main()
