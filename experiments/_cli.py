"""Running a laboratory command: its parser's handler, a ``VideoEnvError`` as one line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from video_env.errors import VideoEnvError
from video_env.run_record import recorded_as


def run_command(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen handler; its exit code (2 on a ``VideoEnvError``)."""
    args = parser.parse_args(argv)
    try:
        with recorded_as(parser.prog, argv):  # its records name this command, to run again
            code: int = args.func(args)
    except VideoEnvError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    return code
