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

import functools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from PIL import Image

from video_env._seeding import stable_seed
from video_env.errors import ConfigError
from video_env.synth.generate import generate_video
from video_env.synth.suites import list_suites, suite_videos
from video_env.synth.vocab import FACT_POOLS
from video_env.synth.world import Needle, SynthVideo
from video_env.video.base import FrameArray, Size
from video_env.video.resize import Resize

#: Model input size (width, height) of the pixel-real CLIP.
INPUT_SIZE = Size(160, 96)
#: Frame sizes training tiles are rendered at (the benches' range of resolutions).
RENDER_SIZES = (Size(448, 252), Size(640, 360), Size(960, 540), Size(1280, 720))
#: Tile grids the VLM role looks through: ``g`` rows of tiles ``1/g`` of the frame high.
TILE_GRIDS = (1, 2, 3)


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


def split_videos(
    split: str, n: int, duration: float = 300.0, n_needles: int = 8
) -> list[SynthVideo]:
    """``n`` generated videos of ``split`` (``"train"``, ``"calib"``, ``"test"``).

    Raises:
        ConfigError: If a seed collides with a suite video's seed (never expected).
    """
    return [split_video(split, i, duration, n_needles) for i in range(n)]


def split_video(split: str, index: int, duration: float = 300.0, n_needles: int = 8) -> SynthVideo:
    """Video ``index`` of ``split``, the one :func:`split_videos` makes (id ``pixel-SPLIT-I``).

    Args:
        split: ``"train"``, ``"calib"`` or ``"test"``.
        index: The video's place in its split.
        duration: Seconds.
        n_needles: Needles drawn into it.

    Raises:
        ConfigError: If its seed collides with a suite video's seed (never expected).
    """
    seed = stable_seed("pixel-real", split, index) % (2**63)
    if seed in _suite_seeds():
        raise ConfigError(f"pixel-real {split} video {index} shares a seed with a suite video")
    return generate_video(f"pixel-{split}-{index}", seed, duration, n_needles)


@functools.cache
def _suite_seeds() -> frozenset[int]:
    return frozenset(v.seed for s in list_suites() for v in suite_videos(s.name))


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


def tile_boxes(size: Size, grid: int) -> list[tuple[int, int, int, int]]:
    """Boxes ``(x0, y0, x1, y1)`` of a ``grid``-row tiling of a frame, tiles of input aspect.

    Rows are ``1/grid`` of the frame high; columns are spread evenly (overlapping where
    needed) so that the tiles cover the width.
    """
    th = size.height / grid
    tw = min(size.width, th * INPUT_SIZE.width / INPUT_SIZE.height)
    cols = max(1, int(np.ceil(size.width / tw - 1e-6)))
    xs = np.linspace(0, size.width - tw, cols) if cols > 1 else np.array([(size.width - tw) / 2])
    return [
        (round(x), round(r * th), round(x + tw), round((r + 1) * th))
        for r in range(grid)
        for x in xs
    ]


def cut_tile(frame: FrameArray, box: tuple[int, int, int, int]) -> npt.NDArray[np.uint8]:
    """The box of ``frame`` resized (bilinear) to the input size."""
    x0, y0, x1, y1 = box
    image = Image.fromarray(np.ascontiguousarray(frame[y0:y1, x0:x1]))
    resized = image.resize((INPUT_SIZE.width, INPUT_SIZE.height), Image.Resampling.BILINEAR)
    out: npt.NDArray[np.uint8] = np.asarray(resized)
    return out


def tiles(frames: FrameArray, grids: tuple[int, ...] = TILE_GRIDS) -> npt.NDArray[np.uint8]:
    """Every tile of every frame on ``grids``, ``uint8[N * tiles, H, W, 3]``."""
    size = Size(frames.shape[2], frames.shape[1])
    boxes = [b for g in grids for b in tile_boxes(size, g)]
    return np.stack([cut_tile(f, b) for f in frames for b in boxes])


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


#: Categories whose facts the model is taught to read (words, numbers and clock times are
#: not: the feasibility run found them at chance even from large crops; their carriers
#: are still taught, so that retrieval finds the sign or the clock).
READ_CATEGORIES = frozenset({"visual", "object"})


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
