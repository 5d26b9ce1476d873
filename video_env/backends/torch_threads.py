"""How many torch threads the transformers backends use: the machine's free cores.

Torch's default is one thread per core, whatever else runs. On a loaded machine that
oversubscribes the cores: the threads of one matrix product wait on each other behind
the other jobs, and a VideoScout chat call on a loaded 2-core machine took 2.4-3.3x
longer on 2 threads than on 1 (issue 72). :func:`choose_threads` gives as many threads
as there are *free* cores (never more), one at least:

    free cores = floor(usable cores - 1-minute load average + 0.5)

where the usable cores are those of the process's affinity mask
(:func:`os.sched_getaffinity`, the CPU count where the platform has no such call) and
the load is :func:`os.getloadavg` (0 where the platform has none). A load of 0.3 on 2
cores leaves 2 free cores, a load of 1.0 one.

One setting overrides the choice: a count (or ``"auto"``) passed as ``threads`` to the
backend, else the ``VIDEO_ENV_TORCH_THREADS`` variable, else ``"auto"``. The count is
chosen when a backend is built (and when a DAPO run starts): the load of the job itself
would otherwise count against it. Torch's thread count is the process's, so the last
backend built sets it for all.
"""

from __future__ import annotations

import math
import os
from typing import Any

from video_env import env_vars
from video_env.errors import ConfigError

__all__ = ["AUTO", "apply_threads", "choose_threads", "free_cores", "usable_cores"]

#: The setting's value that chooses from the machine's load.
AUTO = "auto"


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask; the CPU count without one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def _load() -> float:
    try:
        return max(0.0, float(os.getloadavg()[0]))
    except (AttributeError, OSError):  # Windows
        return 0.0


def free_cores() -> int:
    """The usable cores less the 1-minute load, rounded to the nearest core (at least 0)."""
    return max(0, math.floor(usable_cores() - _load() + 0.5))


def _parse(value: int | str) -> int | None:
    """A thread count, or ``None`` for ``"auto"``.

    Raises:
        ConfigError: On anything else, or a count below 1.
    """
    if isinstance(value, str) and value.strip().lower() == AUTO:
        return None
    try:
        count = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"torch threads must be 'auto' or a count >= 1, got {value!r}") from None
    if isinstance(value, bool) or count < 1:
        raise ConfigError(f"torch threads must be 'auto' or a count >= 1, got {value!r}")
    return count


def choose_threads(threads: int | str | None = None) -> int:
    """The torch thread count to use.

    Args:
        threads: A count, ``"auto"`` (the free cores, at least 1), or ``None``: the
            ``VIDEO_ENV_TORCH_THREADS`` variable's value, ``"auto"`` when it is unset.

    Raises:
        ConfigError: If the setting is neither ``"auto"`` nor a count >= 1.
    """
    setting: int | str = threads if threads is not None else env_vars.TORCH_THREADS.get() or AUTO
    count = _parse(setting)
    if count is not None:
        return count
    return max(1, min(usable_cores(), free_cores()))


def apply_threads(torch: Any, threads: int | str | None = None) -> int:
    """Set torch's intra-op thread count to :func:`choose_threads` ``(threads)``; returns it."""
    count = choose_threads(threads)
    if torch.get_num_threads() != count:
        torch.set_num_threads(count)
    return count
