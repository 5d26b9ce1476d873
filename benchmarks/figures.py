"""Drawing a run's figures: a paper-styled matplotlib figure, saved with its perception note.

What :mod:`benchmarks.plots` (the frontier) and :mod:`benchmarks.plots_runs` (categories,
timeline, reliability) share: :func:`figure` opens a figure under
:data:`~benchmarks.plot_style.PAPER_RC`, :func:`save` writes it whole (never through a
link), the envs' order in a figure, and table values read as numbers.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.plot_style import PAPER_RC, PlotOptions
from benchmarks.run_files import write_atomic
from video_env._optional import require

__all__ = ["SIM_NOTE", "env_rank", "figure", "finite", "number", "pyplot", "save"]

SIM_NOTE = "perception: SIMULATED (simulated sensors, not a model's result)"
#: The envs' order in a figure; others follow.
_ENV_ORDER = ("zoom", "pacing", "clip_query")


def pyplot() -> Any:
    """Matplotlib's pyplot, on the Agg backend (the ``bench`` extra)."""
    matplotlib = require("matplotlib", "bench", "benchmark plots")
    matplotlib.use("Agg")
    return require("matplotlib.pyplot", "bench", "benchmark plots")


@contextmanager
def figure(*args: Any, **kwargs: Any) -> Iterator[tuple[Any, Any]]:
    """``plt.subplots(...)`` under :data:`PAPER_RC`; the figure is closed on leaving."""
    plt = pyplot()
    with plt.rc_context(PAPER_RC):
        fig, axes = plt.subplots(*args, **kwargs)
        try:
            yield fig, axes
        finally:
            plt.close(fig)


def save(fig: Any, path: Path, options: PlotOptions, simulated: bool, note: str = "") -> str:
    """Add the perception note (and ``note``), save ``fig`` to ``path``; its file name."""
    text = "; ".join(t for t in (SIM_NOTE if simulated else "", note) if t)
    if text:
        fig.text(0.01, 0.005, text, fontsize=6.5, color="#a33" if simulated else "#333")
    buffer = io.BytesIO()  # written whole, never through a link (benchmarks.run_files)
    fig.savefig(buffer, dpi=options.dpi, format=options.format, metadata=_metadata(options))
    write_atomic(path, buffer.getvalue())
    return path.name


def _metadata(options: PlotOptions) -> dict[str, Any]:
    """File metadata without dates, so that a figure rewritten unchanged is the same file."""
    if options.format == "pdf":
        return {"CreationDate": None, "ModDate": None}
    if options.format == "svg":
        return {"Date": None}
    return {}


def env_rank(env: str) -> int:
    """The env's place in plots (zoom, pacing, clip_query, then others)."""
    return _ENV_ORDER.index(env) if env in _ENV_ORDER else len(_ENV_ORDER)


def finite(value: Any) -> bool:
    """Whether a table value is a number that can be drawn (not missing, empty or NaN)."""
    return bool(np.isfinite(number(value)))


def number(value: Any) -> float:
    """A table value as a float (NaN for a missing or empty one)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")
