"""``video-env data export``: a suite's or a dataset's questions as an RL engine's rows.

``--format verl`` writes the parquet rows verl's ``RLHFDataset`` reads, one per question,
each played by the ``video_env_agent`` loop (:mod:`video_env.data.verl_rows`).
"""

from __future__ import annotations

import argparse
import os

from video_env.data.verl_rows import AGENT_NAME, SampleSource, export_verl
from video_env.envs.arguments import DEFAULT_SUITE

__all__ = ["add_export", "run_export"]

#: The formats ``data export`` writes.
FORMATS = ("verl",)


def run_export(args: argparse.Namespace) -> int:
    """Write the rows and say how many; returns 0."""
    source = SampleSource(
        suite=None if args.dataset else args.suite,
        dataset=args.dataset,
        # absolute: the rollout workers that read the rows may start elsewhere
        annotations=os.path.abspath(args.annotations) if args.annotations else None,
        video_root=os.path.abspath(args.video_root) if args.video_root else None,
        limit=args.limit,
    )
    count = export_verl(source, args.out, args.agent_name)
    name = source.suite or source.dataset
    print(f"wrote {args.out}: {count} rows of {name} for verl's agent loop {args.agent_name!r}")
    return 0


def add_export(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``data export`` to the ``data`` subcommand's actions."""
    export = commands.add_parser(
        "export", help="write a suite's or a dataset's questions as an RL engine's rows (verl)"
    )
    export.add_argument("out", help="the file to write, e.g. runs/verl/train.parquet")
    export.add_argument("--format", choices=FORMATS, required=True, help="whose rows")
    export.add_argument("--suite", default=DEFAULT_SUITE, help="synthetic suite (default)")
    export.add_argument("--dataset", help="a registered dataset instead (`video-env data list`)")
    export.add_argument("--annotations", help="the dataset's annotation file or folder")
    export.add_argument("--video-root", help="the dataset's video folder")
    export.add_argument("--limit", type=int, default=None, help="first N questions")
    export.add_argument(
        "--agent-name", default=AGENT_NAME, help=f"verl agent loop of the rows ({AGENT_NAME})"
    )
    export.set_defaults(func=run_export)
