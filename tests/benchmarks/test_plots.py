"""Figures for a paper: formats, sizes, no hidden markers, what the titles promise."""

from pathlib import Path
from typing import Any

import pytest

from benchmarks.plot_style import PAPER_RC, PlotOptions
from video_env import ConfigError

plt = pytest.importorskip("matplotlib.pyplot")


def _row(policy: str, env: str = "zoom", acc: float = 0.4, calls: float = 0.0) -> dict[str, Any]:
    return {"env": env, "policy": policy, "presets": "", "rules": "", "accuracy": acc,
            "acc_ci_low": acc - 0.1, "acc_ci_high": acc + 0.1, "mean_model_tokens": 1e5,
            "mean_vlm_calls": calls}  # fmt: skip


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    kept: list[Any] = []
    monkeypatch.setattr(plt, "close", kept.append)  # keep each figure to inspect it
    return kept


def test_identical_rows_share_one_marker_and_others_at_one_cost_sit_side_by_side(
    tmp_path: Path, figures: list[Any]
) -> None:
    from benchmarks.plots import dodge, frontier, merge_identical

    rows = [_row("socratic[offline]"), _row("socratic-short[offline]"), _row("random", acc=0.1),
            _row("uniform", acc=0.3, calls=1.0)]  # fmt: skip
    merged = merge_identical(rows)
    assert "socratic-short[offline]\n= socratic[offline]" in [m["label"] for m in merged]
    assert len(merged) == 3
    offsets = dodge([0.0, 0.0, 0.0, 1000.0], [0.1, 0.4, 0.2, 0.5], "symlog")
    assert offsets[3] == 0 and sorted(offsets[:3]) == [-4.5, 0.0, 4.5]
    assert frontier(tmp_path / "f.png", rows, True, PlotOptions()) == "f.png"
    (fig,) = figures
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "socratic-short[offline]\n= socratic[offline]" in labels
    assert fig.get_figwidth() <= 7.0  # two columns of a paper
    sizes = [t.get_fontsize() for ax in fig.axes for t in (ax.xaxis.label, ax.title)]
    assert min(sizes) >= 6.5


@pytest.mark.parametrize("fmt", ["pdf", "svg", "png"])
def test_plot_formats_and_dpi(tmp_path: Path, fmt: str) -> None:
    from benchmarks.plots import frontier

    name = frontier(tmp_path / f"f.{fmt}", [_row("random")], False, PlotOptions(fmt, 100))
    head = (tmp_path / name).read_bytes()[:8]
    assert head.startswith({"pdf": b"%PDF", "svg": b"<?xml", "png": b"\x89PNG"}[fmt])
    with pytest.raises(ConfigError):
        PlotOptions("jpg")


def _records(confidences: list[float]) -> list[dict[str, Any]]:
    return [{"env": "zoom", "policy": "p", "job": "zoom|p|q|0",
             "vlm_readings": [[c, k % 2 == 0] for k, c in enumerate(confidences)]}]  # fmt: skip


def test_reliability_hatches_sparse_bins_and_says_so_only_when_there_are_some(
    tmp_path: Path, figures: list[Any]
) -> None:
    from benchmarks.plots_runs import reliability

    reliability(tmp_path / "a.png", _records([0.15] * 40 + [0.85] * 3), False, PlotOptions())
    reliability(tmp_path / "b.png", _records([0.15] * 40), False, PlotOptions())
    sparse, dense = figures
    hatched = [p.get_hatch() for p in sparse.axes[0].patches if p.get_hatch()]
    assert hatched and "hatched: 1 bin(s)" in sparse.axes[0].get_title()
    assert sparse.axes[0].get_legend() is not None
    assert not [p for p in dense.axes[0].patches if p.get_hatch()]
    assert "hatched" not in dense.axes[0].get_title()
    assert "every bin holds 30 answers or more" in dense.axes[0].get_title()


def test_the_reliability_key_covers_no_bar_and_no_count(tmp_path: Path, figures: list[Any]) -> None:
    from benchmarks.plots_runs import reliability

    readings = [[0.05, True]] * 40 + [[0.15, True]] * 5 + [[0.95, False]] * 40
    records = [{"env": "zoom", "policy": "p", "job": "zoom|p|q|0", "vlm_readings": readings}]
    reliability(tmp_path / "r.png", records, False, PlotOptions())
    (fig,) = figures
    ax = fig.axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    key = ax.get_legend().get_window_extent(renderer)
    marks = [*ax.patches, *ax.texts]
    assert len(ax.texts) == 3, "one count per bin"
    covered = [m for m in marks if key.overlaps(m.get_window_extent(renderer))]
    assert not covered, f"the key covers {covered}"


def test_the_timeline_has_a_legend_and_a_y_label(tmp_path: Path, figures: list[Any]) -> None:
    from benchmarks.plots_runs import timeline

    record = {"env": "zoom", "policy": "p", "job": "zoom|p|q|0", "sample_id": "q",
              "explored": [[0, 10, "frames"], [10, 50, "caption"]], "window": [5, 8],
              "gt_intervals": [[4, 9]]}  # fmt: skip
    timeline(tmp_path / "t.png", [record], False, PlotOptions())
    (fig,) = figures
    ax = fig.axes[0]
    assert ax.get_ylabel() == "policy (env)"
    assert "ground truth" not in ax.get_xlabel()
    keys = [t.get_text() for t in ax.get_legend().get_texts()]
    assert keys == ["frames a model saw", "captioned only", "answer window", "ground truth"]
    assert PAPER_RC["font.size"] >= 7


def test_every_point_of_the_frontier_lies_inside_its_axes(
    tmp_path: Path, figures: list[Any]
) -> None:
    """Markers set side by side are offset in points, so they cannot set the limits."""
    from benchmarks.plots import frontier

    rows = [
        {**_row("pacing-1x", "pacing", 0.667), "mean_model_tokens": 2560.0},
        {**_row("uniform", "zoom", 0.667, calls=1.0), "mean_model_tokens": 6501.0},
        {**_row("iterative-sampling", "zoom", 0.2, calls=2.0), "mean_model_tokens": 7375.0},
    ]
    frontier(tmp_path / "f.png", rows, True, PlotOptions())
    (fig,) = figures
    tokens, calls = fig.axes[0], fig.axes[1]
    for ax, key in ((tokens, "mean_model_tokens"), (calls, "mean_vlm_calls")):
        low, high = ax.get_xlim()
        assert all(low < r[key] < high for r in rows), (key, ax.get_xlim())


def tick_label_boxes(fig: Any, ax: Any) -> list[Any]:
    """The boxes, on the drawn canvas, of ``ax``'s x tick labels (major and minor) with text."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    return [t.get_window_extent(renderer) for t in x_labels(ax) if t.get_text()]


def x_labels(ax: Any) -> list[Any]:
    return [*ax.get_xticklabels(), *ax.get_xticklabels(minor=True)]


def assert_readable(fig: Any, ax: Any) -> None:
    boxes = tick_label_boxes(fig, ax)
    assert len(boxes) >= 2, [t.get_text() for t in x_labels(ax)]
    clashes = [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :] if a.overlaps(b)]
    assert not clashes, [t.get_text() for t in x_labels(ax)]


@pytest.mark.parametrize(
    ("tokens", "calls"),
    [
        ((1.2e6, 1.5e6, 1.9e6, 1.3e6), (13.0, 20.0, 48.0, 30.0)),  # inside one decade
        ((1e2, 3e4, 1e7, 2e5, 5e3), (0.0, 1.0, 1000.0, 5.0, 200.0)),  # across several
        ((3e5, 4e6, 1e6), (2.0, 3.0, 9.0)),  # a decade or so
    ],
)
def test_the_frontiers_tick_labels_never_overlap(
    tmp_path: Path, figures: list[Any], tokens: tuple[float, ...], calls: tuple[float, ...]
) -> None:
    from benchmarks.plots import frontier

    pairs = enumerate(zip(tokens, calls, strict=True))
    rows = [{**_row(f"p{i}", ("zoom", "pacing")[i % 2], 0.2 + 0.1 * i, calls=c),
             "mean_model_tokens": t} for i, (t, c) in pairs]  # fmt: skip
    frontier(tmp_path / "f.png", rows, False, PlotOptions())
    (fig,) = figures
    for ax in fig.axes:
        assert_readable(fig, ax)


def test_crowded_labels_are_thinned_until_none_overlap() -> None:
    from matplotlib import ticker

    from benchmarks.plots import drop_overlapping_labels

    fig, ax = plt.subplots(figsize=(2, 1))
    ax.set_xlim(0, 100)
    ax.xaxis.set_major_locator(ticker.FixedLocator(range(0, 101, 2)))
    ax.xaxis.set_major_formatter(ticker.FormatStrFormatter("%d calls"))
    assert len(tick_label_boxes(fig, ax)) == 51
    drop_overlapping_labels(fig, ax)
    assert_readable(fig, ax)
    plt.close(fig)
