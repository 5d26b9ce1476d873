"""Training and evaluation data for the pixel-real models, rendered from generated videos.

Videos come from seeds of their own (``stable_seed("pixel-real", split, i)``), checked
disjoint from every synthetic suite's videos. A sample is an image of the model's input
size (``uint8[H, W, 3]``) and a caption:

- whole frames, decoded exactly as :class:`~video_env.backends.openclip.OpenCLIP` decodes
  them for retrieval (shorter side to the input height, centre crop);
- tiles of frames rendered at a bench resolution, cut on the grid the pixel-real VLM
  looks through (:func:`tile_boxes`), resized to the input size.

A sample showing a needle is captioned with its fact ("a red umbrella"), its carrier
("someone holding an umbrella", "the umbrella") or its question; one showing none with
its scene's description. Every sample also lists all the texts true of it
(:attr:`Sample.positives`: the needle's fact, presence, carrier and question, and the
scene), which the training loss uses as multi-positive targets.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from video_env.pixel.splits import READ_CATEGORIES
from video_env.pixel.tiles import INPUT_SIZE, TILE_GRIDS, cut_tile, tile_boxes
from video_env.synth.elements import Needle
from video_env.synth.vocab import FACT_POOLS
from video_env.synth.world import SynthVideo
from video_env.video.base import FrameArray, Size
from video_env.video.resize import Resize

#: Frame sizes training tiles are rendered at (the benches' range of resolutions).
RENDER_SIZES = (Size(448, 252), Size(640, 360), Size(960, 540), Size(1280, 720))


@dataclass(frozen=True)
class Sample:
    """One training or evaluation image with its caption."""

    image: npt.NDArray[np.uint8]
    caption: str
    positives: tuple[str, ...] = ()


@dataclass(frozen=True)
class RenderedSet:
    """Rendered samples: images ``uint8[N, H, W, 3]``, captions and each one's true texts."""

    images: npt.NDArray[np.uint8]
    captions: list[str]
    positives: list[tuple[str, ...]]

    def __len__(self) -> int:
        return len(self.captions)


def decode_for_clip(video: SynthVideo, times: npt.NDArray[np.float64]) -> FrameArray:
    """Frames as the OpenCLIP backend sees them: shorter side to the input, centre crop."""
    native = video.size
    scale = max(INPUT_SIZE.width / native.width, INPUT_SIZE.height / native.height)
    w, h = (
        max(INPUT_SIZE.width, round(native.width * scale)),
        max(INPUT_SIZE.height, round(native.height * scale)),
    )
    frames = video.frames(times, size=Resize.exact(w, h))
    x0, y0 = (w - INPUT_SIZE.width) // 2, (h - INPUT_SIZE.height) // 2
    return frames[:, y0 : y0 + INPUT_SIZE.height, x0 : x0 + INPUT_SIZE.width]


def needle_caption(needle: Needle, rng: np.random.Generator) -> str:
    """A caption of an image showing ``needle``: its fact most often, else its carrier."""
    roll = rng.random()
    if roll < 0.6 and needle.category in READ_CATEGORIES:
        return needle.statement
    if roll < 0.75:
        return needle.presence
    if roll < 0.9:
        return needle.carrier
    return needle.question


def needle_positives(needle: Needle, scene: str) -> tuple[str, ...]:
    """Every text taught as true of an image showing ``needle`` in a scene ``scene``.

    ``(statement, presence, carrier, question, scene)``; the statement is ``""`` for a
    needle whose fact is not taught (:data:`READ_CATEGORIES`).
    """
    statement = needle.statement if needle.category in READ_CATEGORIES else ""
    return (statement, needle.presence, needle.carrier, needle.question, scene)


def _needle_sample(
    video: SynthVideo,
    needle: Needle,
    t: float,
    image: npt.NDArray[np.uint8],
    rng: np.random.Generator,
) -> Sample:
    scene = video.scene_at(t).description
    return Sample(image, needle_caption(needle, rng), needle_positives(needle, scene))


def crop_box(needle: Needle, size: Size, rng: np.random.Generator) -> tuple[int, int, int, int]:
    """A box of input aspect around ``needle``, the needle 20–60 % of its height, jittered."""
    height = min(size.height, needle.pixel_size / rng.uniform(0.2, 0.6))
    width = min(size.width, height * INPUT_SIZE.width / INPUT_SIZE.height)
    cx = needle.position[0] * size.width + rng.uniform(-0.25, 0.25) * width
    cy = needle.position[1] * size.height + rng.uniform(-0.25, 0.25) * height
    x0 = float(np.clip(cx - width / 2, 0, size.width - width))
    y0 = float(np.clip(cy - height / 2, 0, size.height - height))
    return round(x0), round(y0), round(x0 + width), round(y0 + height)


def _inside(needle: Needle, box: tuple[int, int, int, int], size: Size) -> bool:
    cx, cy = needle.position[0] * size.width, needle.position[1] * size.height
    x0, y0, x1, y1 = box
    return x0 <= cx < x1 and y0 <= cy < y1


def needle_kind(needle: Needle) -> str:
    """The needle's category, with visual split into colour and material."""
    if needle.category == "visual":
        return "material" if needle.fact in FACT_POOLS["materials"] else "colour"
    return needle.category


def video_samples(
    video: SynthVideo, rng: np.random.Generator, per_needle: int = 6
) -> Iterator[Sample]:
    """Samples of one video: per needle whole frames, tiles and crops; scene frames and tiles.

    A needle's samples are a third whole frames (the retrieval path), a third tiles of
    the grid the VLM role looks through, and a third crops centred on the needle (with
    jitter), the needle filling 20–60 % of the crop's height — the easiest view, which
    the model learns first.
    """
    for needle in video.needles:
        iv = needle.intervals[0]
        times = np.sort(rng.uniform(iv.start, iv.end, size=per_needle))
        third = max(1, per_needle // 3)
        for t, image in zip(times[:third], decode_for_clip(video, times[:third]), strict=True):
            yield _needle_sample(video, needle, float(t), image, rng)
        for t in times[third : 2 * third]:
            size = RENDER_SIZES[int(rng.integers(len(RENDER_SIZES)))]
            frame = video.frames([float(t)], size=Resize.exact(size.width, size.height))[0]
            grid = int(rng.choice(TILE_GRIDS))
            boxes = [b for b in tile_boxes(size, grid) if _inside(needle, b, size)]
            if boxes:
                tile = cut_tile(frame, boxes[int(rng.integers(len(boxes)))])
                yield _needle_sample(video, needle, float(t), tile, rng)
        for t in times[2 * third :]:
            native = video.size
            frame = video.frames([float(t)], size=Resize.exact(native.width, native.height))[0]
            box = crop_box(needle, native, rng)
            yield _needle_sample(video, needle, float(t), cut_tile(frame, box), rng)
    empty = [
        t
        for t in rng.uniform(0, video.duration, size=4 * per_needle)
        if not video.needles_at(float(t))
    ]
    for t in empty[: 2 * per_needle]:
        description = video.scene_at(float(t)).description
        if rng.random() < 0.5:
            yield Sample(decode_for_clip(video, np.array([t]))[0], description, (description,))
        else:
            size = RENDER_SIZES[int(rng.integers(len(RENDER_SIZES)))]
            frame = video.frames([float(t)], size=Resize.exact(size.width, size.height))[0]
            boxes = tile_boxes(size, int(rng.choice(TILE_GRIDS)))
            tile = cut_tile(frame, boxes[int(rng.integers(len(boxes)))])
            yield Sample(tile, description, (description,))


def render_dataset(videos: list[SynthVideo], seed: int, per_needle: int = 6) -> RenderedSet:
    """All samples of ``videos``."""
    rng = np.random.default_rng(seed)
    samples = [
        s for video in videos for s in _closing(video, video_samples(video, rng, per_needle))
    ]
    return RenderedSet(
        np.stack([s.image for s in samples]),
        [s.caption for s in samples],
        [s.positives for s in samples],
    )


def _closing(video: SynthVideo, samples: Iterator[Sample]) -> Iterator[Sample]:
    yield from samples
    video.close()
