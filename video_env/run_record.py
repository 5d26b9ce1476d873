"""What a training run records about itself: the machine it ran on and the command typed."""

from __future__ import annotations

import os
import platform
import sys

from video_env._optional import require

__all__ = ["command_line", "machine"]


def machine() -> dict[str, object]:
    """The machine and the torch build a run used."""
    torch = require("torch", "models", "recording a training run")
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda": bool(torch.cuda.is_available()),
        "python": platform.python_version(),
    }


def command_line() -> str:
    """The command as typed, to run again: ``video-env ...`` or ``python -m PACKAGE ...``.

    The second for a module run as a program (the laboratory's commands).
    """
    if not sys.argv:
        return ""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    program = "video-env"
    if spec is not None and not spec.name.startswith("video_env.cli"):
        program = f"python -m {spec.name.removesuffix('.__main__')}"
    return " ".join([program, *sys.argv[1:]])
