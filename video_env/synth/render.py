"""Drawing synthetic frames: scene backgrounds with motion, and needle patches.

Backgrounds are cached per (style, size) and scrolled with time; needle patches are
drawn once per (needle, size) with Pillow and pasted with a little jitter, so rendering a
frame costs a couple of array copies.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageDraw, ImageFont

from video_env._seeding import stable_seed
from video_env.synth.elements import Needle, Scene
from video_env.synth.shapes import draw_visual, with_support
from video_env.synth.vocab import PAINT, SceneStyle
from video_env.video.base import FrameArray, Size


class RenderedVideo(Protocol):
    """What the renderer reads of a video (:class:`~video_env.synth.world.SynthVideo`)."""

    id: str
    seed: int
    fps: float

    @property
    def native_size(self) -> Size:
        """The size needle pixel sizes are given at."""
        ...

    def scene_at(self, t: float) -> Scene:
        """The scene on screen at ``t``."""
        ...

    def needles_at(self, t: float) -> list[Needle]:
        """The needles on screen at ``t``."""
        ...


_STRIPE = 64  # native px period of the scrolling stripes
_SCROLL_PX_PER_S = 48.0  # native px per second
_GRAIN_FIELDS = 7  # distinct sensor-grain fields, cycled frame by frame
_GRAIN_LEVEL = 2  # +- intensity of the grain


class Renderer:
    """Renders frames of one video (a :class:`RenderedVideo`) at any time and size."""

    def __init__(self, video: RenderedVideo) -> None:
        self.video = video
        self._backgrounds: dict[tuple[str, Size], FrameArray] = {}
        self._patches: dict[tuple[str, Size], npt.NDArray[np.uint8]] = {}
        self._grain: dict[Size, npt.NDArray[np.uint8]] = {}

    def clear(self) -> None:
        """Drop cached backgrounds and patches."""
        self._backgrounds.clear()
        self._patches.clear()
        self._grain.clear()

    def scale(self, size: Size) -> float:
        """Isotropic drawing scale of ``size`` relative to the native size."""
        native = self.video.native_size
        return min(size.width / native.width, size.height / native.height)

    def render(self, times: npt.NDArray[np.float64], size: Size) -> FrameArray:
        """Frames at (already validated) times, ``uint8[N, H, W, 3]``."""
        out = np.empty((len(times), size.height, size.width, 3), dtype=np.uint8)
        for i, t in enumerate(times):
            self._draw_frame(out[i], float(t), size)
        return out

    def _draw_frame(self, frame: FrameArray, t: float, size: Size) -> None:
        s = self.scale(size)
        scene = self.video.scene_at(t)
        background = self._background(scene.style, size)
        period = max(2, round(_STRIPE * s))
        shift = round(t * _SCROLL_PX_PER_S * s) % period
        # Sensor grain: a different small offset field per frame index, so consecutive
        # frames always differ even where nothing moves by a whole pixel.
        grain = self._grain_fields(size)[round(t * self.video.fps) % _GRAIN_FIELDS]
        np.add(background[:, shift : shift + size.width], grain, out=frame)
        self._draw_walker(frame, t, s)
        for needle in self.video.needles_at(t):
            self._paste(frame, needle, t, size)

    def _grain_fields(self, size: Size) -> npt.NDArray[np.uint8]:
        fields = self._grain.get(size)
        if fields is None:
            rng = np.random.default_rng(stable_seed(self.video.seed, "grain"))
            shape = (_GRAIN_FIELDS, size.height, size.width, 1)
            fields = rng.integers(0, _GRAIN_LEVEL + 1, shape).astype(np.uint8)
            self._grain[size] = fields
        return fields

    def _background(self, style: SceneStyle, size: Size) -> FrameArray:
        key = (style.name, size)
        cached = self._backgrounds.get(key)
        if cached is not None:
            return cached
        s = self.scale(size)
        period = max(2, round(_STRIPE * s))
        width = size.width + period
        w = np.linspace(0.0, 1.0, size.height)[:, None, None]
        top, bottom = np.array(style.top, float), np.array(style.bottom, float)
        image = np.broadcast_to((1 - w) * top + w * bottom, (size.height, width, 3)).copy()
        x = np.arange(width)
        stripes = (np.sin(2 * math.pi * x / period) * 18)[None, :, None]
        floor = slice(int(size.height * 0.7), size.height)
        image[floor] += stripes
        rng = np.random.default_rng(stable_seed(style.name, self.video.seed))
        noise = rng.normal(0, 6, size=(-(-size.height // 8), -(-width // 8), 1))
        image += np.kron(noise, np.ones((8, 8, 1)))[: size.height, :width]
        result: FrameArray = np.clip(image, 0, 255 - _GRAIN_LEVEL).astype(np.uint8)
        self._backgrounds[key] = result
        return result

    def _draw_walker(self, frame: FrameArray, t: float, s: float) -> None:
        """A disc crossing the frame: consecutive frames always differ."""
        height, width = frame.shape[:2]
        radius = max(1, round(40 * s))
        phase = (stable_seed(self.video.id, self.video.seed) % 1000) / 1000
        cx = round(((t / 40.0 + phase) % 1.0) * width)
        cy = round(height * 0.75)
        y0, y1 = max(0, cy - radius), min(height, cy + radius)
        x0, x1 = max(0, cx - radius), min(width, cx + radius)
        if y0 >= y1 or x0 >= x1:
            return
        yy, xx = np.ogrid[y0:y1, x0:x1]
        mask = (yy - cy) ** 2 + (xx - cx) ** 2 <= radius**2
        frame[y0:y1, x0:x1][mask] = (40, 40, 60)

    def needle_box(self, needle: Needle, t: float, size: Size) -> tuple[int, int, int, int]:
        """Where ``needle`` is drawn at ``t`` in a frame of ``size``: ``(x0, y0, x1, y1)``.

        The box of its patch (which may reach past the frame's edges), jitter included.
        """
        ph, pw = self._patch(needle, size).shape[:2]
        jitter = 0.01 * size.width * math.sin(2 * math.pi * t / 7.0 + len(needle.id))
        cx = needle.position[0] * size.width + jitter
        cy = needle.position[1] * size.height
        x0, y0 = round(cx - pw / 2), round(cy - ph / 2)
        return x0, y0, x0 + pw, y0 + ph

    def _paste(self, frame: FrameArray, needle: Needle, t: float, size: Size) -> None:
        patch = self._patch(needle, size)
        ph, pw = patch.shape[:2]
        x0, y0, _, _ = self.needle_box(needle, t, size)
        fx0, fy0 = max(0, x0), max(0, y0)
        fx1, fy1 = min(size.width, x0 + pw), min(size.height, y0 + ph)
        if fx0 >= fx1 or fy0 >= fy1:
            return
        region = patch[fy0 - y0 : fy1 - y0, fx0 - x0 : fx1 - x0]
        alpha = region[..., 3:4] > 0
        np.copyto(frame[fy0:fy1, fx0:fx1], region[..., :3], where=alpha)

    def _patch(self, needle: Needle, size: Size) -> npt.NDArray[np.uint8]:
        key = (needle.id, size)
        cached = self._patches.get(key)
        if cached is None:
            cached = draw_needle(needle, self.scale(size))
            self._patches[key] = cached
        return cached


def _font(px: float) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=max(1.0, px))


def draw_needle(needle: Needle, scale: float) -> npt.NDArray[np.uint8]:
    """An RGBA patch showing the needle at ``scale`` times its native size."""
    px = max(1.0, needle.pixel_size * scale)
    if needle.category == "text":
        return _text_plate(needle.fact, px)
    if needle.category == "time":
        return _clock(needle.fact, px, digital=needle.style == "digital")
    if needle.category == "object":
        return with_support(_icon(needle.fact, px), needle.carrier)
    colour = (*PAINT.get(needle.fact, (128, 128, 128)), 255)
    shaped = draw_visual(needle.carrier, needle.fact, colour, px)
    return shaped if shaped is not None else _painted(needle.fact, px)


def _canvas(width: float, height: float) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("RGBA", (max(2, math.ceil(width)), max(2, math.ceil(height))), (0, 0, 0, 0))
    return image, ImageDraw.Draw(image)


def _text_plate(text: str, px: float) -> npt.NDArray[np.uint8]:
    font = _font(px)
    left, top, right, bottom = font.getbbox(text)
    pad = max(1.0, px * 0.4)
    image, draw = _canvas(right - left + 2 * pad, px * 1.2 + 2 * pad)
    draw.rectangle((0, 0, image.width - 1, image.height - 1), fill=(250, 250, 240, 255))
    draw.text(
        (pad - left, pad - top + (px * 1.2 - (bottom - top)) / 2),
        text,
        font=font,
        fill=(10, 10, 10, 255),
    )
    patch: npt.NDArray[np.uint8] = np.asarray(image)
    return patch


def _clock(fact: str, px: float, digital: bool) -> npt.NDArray[np.uint8]:
    hours, minutes = (int(v) for v in fact.split(":"))
    if digital:
        return _text_plate(f"{hours:02d}:{minutes:02d}", px * 0.5)
    image, draw = _canvas(px, px)
    r = px / 2
    draw.ellipse(
        (0, 0, px - 1, px - 1),
        fill=(250, 250, 250, 255),
        outline=(20, 20, 20, 255),
        width=max(1, round(px / 30)),
    )
    for hand, length, width in (
        (hours % 12 / 12 + minutes / 720, 0.5, 0.06),
        (minutes / 60, 0.8, 0.035),
    ):
        angle = 2 * math.pi * hand - math.pi / 2
        end = (r + length * r * math.cos(angle), r + length * r * math.sin(angle))
        draw.line((r, r, *end), fill=(10, 10, 10, 255), width=max(1, round(px * width)))
    patch: npt.NDArray[np.uint8] = np.asarray(image)
    return patch


def _painted(fact: str, px: float) -> npt.NDArray[np.uint8]:
    """A painted ellipse: the shape of a visual carrier without one of its own."""
    colour = (*PAINT.get(fact, (128, 128, 128)), 255)
    image, draw = _canvas(px * 1.4, px)
    draw.ellipse((0, 0, image.width - 1, image.height - 1), fill=colour)
    if fact in ("wood", "stone"):
        darker = (*(max(0, c - 40) for c in colour[:3]), 255)
        for k in range(1, 6):
            y = k * image.height / 6
            draw.line((image.width * 0.15, y, image.width * 0.85, y), fill=darker)
    patch: npt.NDArray[np.uint8] = np.asarray(image)
    return patch


def _icon(fact: str, px: float) -> npt.NDArray[np.uint8]:
    h = stable_seed(fact)
    colour = (60 + h % 180, 60 + (h >> 8) % 180, 60 + (h >> 16) % 180, 255)
    image, draw = _canvas(px, px * 1.3)
    shape = h % 4
    box = (0, 0, px - 1, px - 1)
    if shape == 0:
        draw.ellipse(box, fill=colour)
    elif shape == 1:
        draw.polygon([(px / 2, 0), (px - 1, px - 1), (0, px - 1)], fill=colour)
    elif shape == 2:
        draw.rectangle(box, fill=colour)
    else:
        draw.polygon([(px / 2, 0), (px - 1, px / 2), (px / 2, px - 1), (0, px / 2)], fill=colour)
    label = _font(px * 0.22)
    draw.text((0, px * 1.02), fact, font=label, fill=(10, 10, 10, 255))
    patch: npt.NDArray[np.uint8] = np.asarray(image)
    return patch
