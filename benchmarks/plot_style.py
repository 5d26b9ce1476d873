"""How a run's figures are written: file format, resolution, and type sizes for a paper.

Kept apart from :mod:`benchmarks.plots` (which imports matplotlib) so that the CLI and
the run can name the figures' files without it.
"""

from __future__ import annotations

from dataclasses import dataclass

from video_env.errors import ConfigError

__all__ = ["PAPER_RC", "PLOT_FILES", "PLOT_FORMATS", "PLOT_NAMES", "PlotOptions"]

#: The figures of a run, by file stem.
PLOT_NAMES = ("frontier", "categories", "timeline", "reliability")
#: The formats ``--plot-format`` takes (vector formats for papers).
PLOT_FORMATS = ("png", "pdf", "svg")
#: Every figure file a run may write (``--fresh`` removes them all).
PLOT_FILES = tuple(f"{name}.{ext}" for name in PLOT_NAMES for ext in PLOT_FORMATS)
#: Type sizes, in points, at the figures' own size: the figures are drawn at a paper's
#: widths (3.4 in for one column, 7 in for two), so these are the printed sizes.
PAPER_RC = {
    "font.size": 8,
    "axes.titlesize": 8.5,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "figure.titlesize": 9,
    "pdf.fonttype": 42,  # TrueType in PDFs: editable text, accepted by publishers
    "svg.fonttype": "none",  # text stays text in SVGs
}
#: One column and two columns of a paper, in inches.
COLUMN_WIDTH, PAGE_WIDTH = 3.4, 7.0


@dataclass(frozen=True)
class PlotOptions:
    """How the figures are written.

    Attributes:
        format: Figure file format: png, or pdf and svg (vector, for papers).
        dpi: Resolution of PNG figures (and of a vector file's raster parts).
    """

    format: str = "png"
    dpi: int = 200

    def __post_init__(self) -> None:
        if self.format not in PLOT_FORMATS:
            raise ConfigError(f"--plot-format {self.format!r}: choose one of {PLOT_FORMATS}")
        if self.dpi < 50:
            raise ConfigError(f"--plot-dpi must be at least 50, got {self.dpi}")

    def file(self, name: str) -> str:
        """The file name of the figure ``name`` (a :data:`PLOT_NAMES` stem)."""
        return f"{name}.{self.format}"
