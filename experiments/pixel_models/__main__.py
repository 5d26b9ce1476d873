"""``python -m experiments.pixel_models perception | vlm``: train the pixel world's own models.

``perception`` trains, calibrates and evaluates the tiny CLIP of the pixel-real
perception; ``vlm`` trains the pixel VLM (a tiny Qwen2.5-VL). Without ``--out`` each
writes the weights the library ships (``video_env/pixel/weights``, ``vlm_weights``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from experiments._cli import run_command
from experiments.pixel_models.cli import add_perception_command, add_vlm_command


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m experiments.pixel_models", description=__doc__.split("\n")[0]
    )
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    add_perception_command(kinds)
    add_vlm_command(kinds)
    return run_command(parser, argv)


if __name__ == "__main__":
    raise SystemExit(main())
