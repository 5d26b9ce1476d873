"""Carrier shapes: every visual carrier is its own silhouette; object needles show a support."""

from __future__ import annotations

import itertools

import numpy as np

from video_env.synth.elements import Needle
from video_env.synth.render import draw_needle
from video_env.synth.shapes import VISUAL_SHAPES
from video_env.synth.vocab import CARRIERS
from video_env.types import Interval


def _needle(carrier: str, category: str, fact: str) -> Needle:
    return Needle(
        "n0", category, carrier, fact, (), (Interval(0, 5),), 64.0, (0.5, 0.5), "q", "p", "s"
    )  # type: ignore[arg-type]


def _silhouette(patch: np.ndarray, size: int = 24) -> np.ndarray:
    """The alpha mask resampled to a fixed grid (compares shapes, not sizes)."""
    alpha = patch[..., 3] > 0
    rows = np.linspace(0, alpha.shape[0] - 1, size).round().astype(int)
    cols = np.linspace(0, alpha.shape[1] - 1, size).round().astype(int)
    return alpha[np.ix_(rows, cols)]


def test_every_visual_carrier_has_a_shape() -> None:
    visual = {c.name for c in CARRIERS if c.category == "visual"}
    assert visual == set(VISUAL_SHAPES)


def test_visual_carriers_are_distinct_silhouettes() -> None:
    shapes = {c: _silhouette(draw_needle(_needle(c, "visual", "red"), 1.0)) for c in VISUAL_SHAPES}
    for a, b in itertools.combinations(shapes, 2):
        differing = float(np.mean(shapes[a] != shapes[b]))
        assert differing > 0.08, (a, b, differing)


def test_colour_paints_the_carrier_and_material_adds_texture() -> None:
    red = draw_needle(_needle("the kite", "visual", "red"), 1.0)
    blue = draw_needle(_needle("the kite", "visual", "blue"), 1.0)
    assert (red[..., 3] > 0).sum() == (blue[..., 3] > 0).sum()
    assert not np.array_equal(red, blue)
    wood = draw_needle(_needle("the bench", "visual", "wood"), 1.0)
    opaque = wood[wood[..., 3] > 0, :3]
    assert len(np.unique(opaque, axis=0)) > 2  # grain, not one flat colour


def test_object_needles_stand_on_their_support() -> None:
    table = draw_needle(_needle("the kitchen table", "object", "vase"), 1.0)
    shelf = draw_needle(_needle("the bookshelf", "object", "vase"), 1.0)
    assert table.shape == shelf.shape
    assert not np.array_equal(table, shelf)
    h = table.shape[0]
    icon_only = draw_needle(_needle("the desk", "object", "vase"), 1.0)[: round(h / 1.4)]
    assert np.array_equal(icon_only, table[: round(h / 1.4)])


def test_every_carrier_draws_at_any_size() -> None:
    for carrier in CARRIERS:
        fact = {"colours": "red", "materials": "stone"}.get(carrier.facts, "")
        fact = fact or {"objects": "vase", "times": "3:15", "words": "MAPLE"}.get(
            carrier.facts, "1047"
        )
        for px in (0.5, 1.0, 2.0, 3.0, 7.0, 40.0):
            needle = _needle(carrier.name, carrier.category, fact)
            patch = draw_needle(needle, px / needle.pixel_size)
            assert patch.ndim == 3 and patch.shape[2] == 4 and patch.shape[0] >= 2
