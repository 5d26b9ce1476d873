"""What a training run records about itself: the machine it ran on and the command typed."""

from __future__ import annotations

import contextlib
import contextvars
import os
import platform
import sys
from collections.abc import Iterator, Sequence

from video_env._optional import require

__all__ = ["command_line", "machine", "recorded_as"]


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


#: The command a run is recorded under while :func:`recorded_as` runs it (else
#: ``video-env`` and the process's arguments).
_COMMAND: contextvars.ContextVar[tuple[str, ...] | None] = contextvars.ContextVar(
    "command", default=None
)


@contextlib.contextmanager
def recorded_as(program: str, args: Sequence[str] | None = None) -> Iterator[None]:
    """Record the runs inside as ``program ARGS`` (``args``: the process's by default).

    For a command other than ``video-env`` (the laboratory's ``python -m PACKAGE``), and for
    one run in-process with its own arguments.
    """
    token = _COMMAND.set((program, *(sys.argv[1:] if args is None else args)))
    try:
        yield
    finally:
        _COMMAND.reset(token)


def command_line() -> str:
    """The command as typed, to run again: ``video-env ...`` (or :func:`recorded_as`'s)."""
    command = _COMMAND.get()
    if command is not None:
        return " ".join(command)
    return " ".join(["video-env", *sys.argv[1:]]) if sys.argv else ""
