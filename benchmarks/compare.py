"""``video-env bench compare A B``: per (env, policy) differences between two runs."""

from __future__ import annotations

import os
from pathlib import Path

from benchmarks.records import EpisodeLog, dedupe
from benchmarks.summary import summarize
from video_env.errors import ConfigError

METRICS = ("accuracy", "mean_gtou", "mean_vlm_calls", "mean_llm_calls", "mean_frames")


def compare(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> str:
    """A Markdown table of B - A for the rows both runs have (and which only one has).

    Raises:
        ConfigError: If a folder holds no records.
    """
    rows = []
    for folder in (a, b):
        records = dedupe(EpisodeLog(folder).load())
        if not records:
            raise ConfigError(f"{folder} holds no episode records")
        rows.append({(r["env"], r["policy"]): r for r in summarize(records)})
    left, right = rows
    header = "| env | policy | " + " | ".join(f"Δ {m}" for m in METRICS) + " |"
    lines = [f"A = {Path(a)}, B = {Path(b)} (B − A)", "", header, "|" + "---|" * (2 + len(METRICS))]
    for key in sorted(set(left) & set(right)):
        deltas = [right[key][m] - left[key][m] for m in METRICS]
        lines.append(f"| {key[0]} | {key[1]} | " + " | ".join(f"{d:+.3f}" for d in deltas) + " |")
    for only, side in ((set(left) - set(right), "A"), (set(right) - set(left), "B")):
        lines += [f"| {k[0]} | {k[1]} | only in {side} |" for k in sorted(only)]
    return "\n".join(lines) + "\n"
