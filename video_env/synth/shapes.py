"""Carrier shapes: each visual carrier and each object support drawn as its own silhouette.

An umbrella is a canopy on a hooked handle, a car a body with a cabin and wheels, a kite a
diamond with a tail, and so on, so that "find the umbrella" can be answered from pixels.
Colour facts paint the carrier; material facts paint it and add the material's texture
(wood grain, stone speckles, a metal highlight, translucent glass). Object needles stand
on a drawing of their support (table, bookshelf, windowsill, pedestal, desk).

Shapes are drawn with Pillow on a transparent canvas whose height is the needle's pixel
size; they only change pixels, never the simulator (which reads annotations).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageDraw

from video_env._seeding import stable_seed

RGBA = tuple[int, int, int, int]
Draw = ImageDraw.ImageDraw

_DARK: RGBA = (25, 25, 30, 255)
_GREY: RGBA = (110, 110, 115, 255)
#: Shapes are drawn at least this many pixels high (then scaled down), so that their
#: proportions hold at any size.
_MIN_DRAW_PX = 48.0


def _shade(colour: RGBA, delta: int) -> RGBA:
    r, g, b = (max(0, min(255, c + delta)) for c in colour[:3])
    return (r, g, b, 255)


def _umbrella(d: Draw, w: float, h: float, c: RGBA) -> None:
    lw = max(1, round(h / 25))
    d.pieslice((0, 0, w - 1, h * 0.9), 180, 360, fill=c)
    for k in range(1, 4):  # ribs
        x = w * k / 4
        d.line((w / 2, 0, x, h * 0.45), fill=_shade(c, -50), width=lw)
    d.line((w / 2, h * 0.45, w / 2, h * 0.92), fill=_DARK, width=lw)
    d.arc((w / 2 - h * 0.16, h * 0.76, w / 2, h - 1), 0, 180, fill=_DARK, width=lw)


def _car(d: Draw, w: float, h: float, c: RGBA) -> None:
    d.polygon(
        [(w * 0.22, h * 0.42), (w * 0.34, h * 0.1), (w * 0.68, h * 0.1), (w * 0.8, h * 0.42)],
        fill=c,
    )
    d.rectangle((0, h * 0.4, w - 1, h * 0.78), fill=c)
    d.polygon(
        [(w * 0.37, h * 0.4), (w * 0.42, h * 0.17), (w * 0.5, h * 0.17), (w * 0.5, h * 0.4)],
        fill=(200, 225, 240, 255),
    )
    d.polygon(
        [(w * 0.54, h * 0.4), (w * 0.54, h * 0.17), (w * 0.64, h * 0.17), (w * 0.72, h * 0.4)],
        fill=(200, 225, 240, 255),
    )
    r = h * 0.2
    for cx in (w * 0.22, w * 0.78):
        d.ellipse((cx - r, h - 1 - 2 * r, cx + r, h - 1), fill=_DARK)


def _balloon(d: Draw, w: float, h: float, c: RGBA) -> None:
    d.ellipse((w * 0.1, 0, w * 0.9, h * 0.7), fill=c)
    d.polygon([(w * 0.45, h * 0.68), (w * 0.55, h * 0.68), (w / 2, h * 0.74)], fill=c)
    points = [(w / 2 + w * 0.06 * math.sin(k), h * (0.74 + 0.26 * k / 6)) for k in range(7)]
    d.line(points, fill=_GREY, width=max(1, round(h / 60)))


def _backpack(d: Draw, w: float, h: float, c: RGBA) -> None:
    lw = max(1, round(h / 18))
    d.arc((w * 0.3, 0, w * 0.7, h * 0.3), 180, 360, fill=_shade(c, -60), width=lw)
    d.rounded_rectangle((w * 0.1, h * 0.12, w * 0.9, h - 1), radius=w * 0.25, fill=c)
    d.rounded_rectangle(
        (w * 0.25, h * 0.55, w * 0.75, h * 0.9), radius=w * 0.08, fill=_shade(c, -45)
    )
    d.line((w * 0.25, h * 0.55, w * 0.75, h * 0.55), fill=_DARK, width=lw)


def _door(d: Draw, w: float, h: float, c: RGBA) -> None:
    d.rectangle((0, 0, w - 1, h - 1), fill=_shade(c, -70))
    d.rectangle((w * 0.08, h * 0.05, w * 0.92, h - 1), fill=c)
    for y0, y1 in ((0.1, 0.45), (0.52, 0.92)):
        d.rectangle(
            (w * 0.2, h * y0, w * 0.8, h * y1), outline=_shade(c, -50), width=max(1, round(h / 60))
        )
    r = max(1.0, h * 0.03)
    d.ellipse((w * 0.75 - r, h * 0.5 - r, w * 0.75 + r, h * 0.5 + r), fill=(220, 190, 60, 255))


def _kite(d: Draw, w: float, h: float, c: RGBA) -> None:
    top, mid, bottom = (w * 0.5, 0), h * 0.3, h * 0.72
    d.polygon([top, (w * 0.95, mid), (w * 0.5, bottom), (w * 0.05, mid)], fill=c)
    d.line((w * 0.5, 0, w * 0.5, bottom), fill=_shade(c, -70), width=max(1, round(h / 50)))
    d.line((w * 0.05, mid, w * 0.95, mid), fill=_shade(c, -70), width=max(1, round(h / 50)))
    tail = [
        (w * 0.5 + w * 0.1 * math.sin(k * 1.3), bottom + (h - 1 - bottom) * k / 5) for k in range(6)
    ]
    d.line(tail, fill=_GREY, width=max(1, round(h / 50)))
    for x, y in tail[2::2]:
        s = h * 0.04
        d.polygon([(x - s, y), (x, y - s), (x + s, y), (x, y + s)], fill=_shade(c, 40))


def _bench(d: Draw, w: float, h: float, c: RGBA) -> None:
    d.rectangle((0, h * 0.1, w - 1, h * 0.32), fill=c)  # backrest
    d.rectangle((0, h * 0.45, w - 1, h * 0.62), fill=c)  # seat
    for x in (w * 0.08, w * 0.86):
        d.rectangle((x, h * 0.32, x + w * 0.06, h - 1), fill=_shade(c, -40))


def _statue(d: Draw, w: float, h: float, c: RGBA) -> None:
    d.rectangle((w * 0.15, h * 0.82, w * 0.85, h - 1), fill=_shade(c, -35))
    r = h * 0.1
    d.ellipse((w / 2 - r, 0, w / 2 + r, 2 * r), fill=c)
    d.polygon(
        [(w * 0.3, h * 0.82), (w * 0.38, h * 0.22), (w * 0.62, h * 0.22), (w * 0.7, h * 0.82)],
        fill=c,
    )
    d.line((w * 0.6, h * 0.28, w * 0.85, h * 0.05), fill=c, width=max(1, round(h / 14)))


def _bowl(d: Draw, w: float, h: float, c: RGBA) -> None:
    d.chord((0, -h * 0.6, w - 1, h * 0.85), 0, 180, fill=c)
    d.ellipse((0, h * 0.05, w - 1, h * 0.4), fill=_shade(c, -45))
    d.rectangle((w * 0.35, h * 0.84, w * 0.65, h - 1), fill=_shade(c, -25))


#: Visual carriers: (width / height ratio, drawing function).
VISUAL_SHAPES: dict[str, tuple[float, Callable[[Draw, float, float, RGBA], None]]] = {
    "the umbrella": (1.2, _umbrella),
    "the parked car": (1.9, _car),
    "the balloon": (0.7, _balloon),
    "the backpack": (0.75, _backpack),
    "the front door": (0.55, _door),
    "the kite": (0.8, _kite),
    "the bench": (1.8, _bench),
    "the statue": (0.6, _statue),
    "the bowl": (1.6, _bowl),
}


def _texture(patch: npt.NDArray[np.uint8], fill: RGBA, material: str, seed: int) -> None:
    """Material texture on the pixels painted in exactly ``fill`` (in place)."""
    mask = np.all(patch == np.asarray(fill, np.uint8), axis=-1)
    if not mask.any():
        return
    rgb = patch[..., :3].astype(np.int16)
    h, w = mask.shape
    if material == "wood":
        rows = np.arange(h)[:, None] + 2.0 * np.sin(np.arange(w)[None, :] / max(2.0, w / 6))
        grain = (np.sin(rows * 2 * math.pi / max(3.0, h / 8)) > 0.6)[..., None] * -45
        rgb = np.where(mask[..., None], rgb + grain, rgb)
    elif material == "stone":
        noise = np.random.default_rng(seed).integers(-40, 41, size=(h, w, 1))
        rgb = np.where(mask[..., None], rgb + noise, rgb)
    elif material == "metal":
        band = np.abs(np.arange(w)[None, :] - 0.3 * w) < max(1.0, 0.08 * w)
        rgb = np.where((mask & band)[..., None], np.int16(240), rgb)
    elif material == "glass":
        rgb = np.where(mask[..., None], (rgb + 255) // 2, rgb)
        patch[..., 3] = np.where(mask, 170, patch[..., 3])
    patch[..., :3] = np.clip(rgb, 0, 255).astype(np.uint8)


def draw_visual(carrier: str, fact: str, colour: RGBA, px: float) -> npt.NDArray[np.uint8] | None:
    """The carrier painted with ``colour`` (and textured if ``fact`` is a material).

    Returns ``None`` for a carrier without a shape of its own.
    """
    entry = VISUAL_SHAPES.get(carrier)
    if entry is None:
        return None
    ratio, draw_fn = entry
    w, h = max(2, math.ceil(px * ratio)), max(2, math.ceil(px))
    k = max(1.0, _MIN_DRAW_PX / h)  # tiny patches: drawn larger, then scaled down
    big_w, big_h = math.ceil(w * k), math.ceil(h * k)
    image = Image.new("RGBA", (big_w, big_h), (0, 0, 0, 0))
    draw_fn(ImageDraw.Draw(image), float(big_w), float(big_h), colour)
    patch = np.array(image)
    _texture(patch, colour, fact, stable_seed(carrier, fact))
    return _shrink(patch, w, h)


def _shrink(patch: npt.NDArray[np.uint8], w: int, h: int) -> npt.NDArray[np.uint8]:
    """``patch`` resized to ``w`` x ``h`` (unchanged when it already has that size)."""
    if patch.shape[:2] == (h, w):
        return patch
    small: npt.NDArray[np.uint8] = np.array(
        Image.fromarray(patch, "RGBA").resize((w, h), Image.Resampling.BOX)
    )
    return small


def _support(d: Draw, carrier: str, w: float, y0: float, h: float) -> None:
    """The object's support below ``y0`` (``h`` tall)."""
    wood, dark = (150, 105, 60, 255), (95, 65, 35, 255)
    if carrier == "the kitchen table":
        d.rectangle((0, y0, w - 1, y0 + h * 0.25), fill=wood)
        for x in (w * 0.05, w * 0.88):
            d.rectangle((x, y0, x + w * 0.07, y0 + h - 1), fill=dark)
    elif carrier == "the bookshelf":
        d.rectangle((0, y0, w - 1, y0 + h - 1), fill=dark)
        for k in range(7):
            hue = stable_seed("book", k)
            x = w * (0.05 + k * 0.13)
            d.rectangle(
                (x, y0 + h * 0.25, x + w * 0.1, y0 + h - 2),
                fill=(60 + hue % 160, 60 + (hue >> 8) % 160, 60 + (hue >> 16) % 160, 255),
            )
    elif carrier == "the windowsill":
        d.rectangle((0, y0, w - 1, y0 + h * 0.3), fill=(235, 235, 230, 255))
        d.rectangle((w * 0.1, y0 + h * 0.3, w * 0.9, y0 + h - 1), fill=(170, 205, 235, 255))
        d.line(
            (w / 2, y0 + h * 0.3, w / 2, y0 + h - 1),
            fill=(235, 235, 230, 255),
            width=max(1, round(h / 10)),
        )
    elif carrier == "the pedestal":
        d.rectangle((w * 0.25, y0, w * 0.75, y0 + h - 1), fill=(225, 220, 210, 255))
        d.rectangle((w * 0.15, y0 + h * 0.8, w * 0.85, y0 + h - 1), fill=(200, 195, 185, 255))
    else:  # the desk: a top with a drawer block
        d.rectangle((0, y0, w - 1, y0 + h * 0.22), fill=(90, 90, 100, 255))
        d.rectangle((w * 0.6, y0 + h * 0.22, w * 0.95, y0 + h - 1), fill=(120, 120, 130, 255))
        d.rectangle((w * 0.05, y0 + h * 0.22, w * 0.12, y0 + h - 1), fill=(120, 120, 130, 255))


def with_support(icon: npt.NDArray[np.uint8], carrier: str) -> npt.NDArray[np.uint8]:
    """``icon`` standing on a drawing of ``carrier`` (a patch 40 % taller)."""
    h, w = icon.shape[:2]
    extra = max(2, round(h * 0.4))
    k = max(1.0, _MIN_DRAW_PX / extra)
    big = Image.new("RGBA", (math.ceil(w * k), math.ceil(extra * k)), (0, 0, 0, 0))
    _support(ImageDraw.Draw(big), carrier, float(big.width), 0.0, float(big.height))
    out = np.zeros((h + extra, w, 4), np.uint8)
    out[h:] = _shrink(np.array(big), w, extra)
    alpha = icon[..., 3:4] > 0
    np.copyto(out[:h], icon, where=alpha)
    return out
