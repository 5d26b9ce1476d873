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
    """The command as typed (``video-env ...``)."""
    return " ".join(["video-env", *sys.argv[1:]]) if sys.argv else ""
