"""The ``video-env`` command line.

Subcommands are plugins registered under the ``video_env.commands`` entry-point group,
each a function ``register(subparsers)`` that adds a parser whose ``func`` default takes
the parsed arguments and returns an exit code. This keeps ``video_env`` free of imports
of the packages built on it (``policies``, ``benchmarks``), which add their own commands.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

from video_env.errors import VideoEnvError

ENTRY_POINT_GROUP = "video_env.commands"


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every registered subcommand."""
    from video_env import __version__

    parser = argparse.ArgumentParser(
        prog="video-env",
        description="Long videos as Gymnasium environments for video QA agents.",
    )
    parser.add_argument("--version", action="version", version=f"video-env {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        entry.load()(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        code: int = args.func(args)
    except BrokenPipeError:  # `video-env synth show ... | head`: the reader left early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error at exit
        return 0
    except VideoEnvError as exc:
        print(f"video-env: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # an unwritable --out, a full disk: one line, no traceback
        print(f"video-env: error: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
