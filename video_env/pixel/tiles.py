"""The tile grid the pixel-real perceptions look through, and the tiny CLIP's input size.

The pixel-real VLM role scores options over tiles of the env's frames: ``g`` rows of
tiles ``1/g`` of the frame high, each of the CLIP's input aspect, resized to its input
size. Training (``experiments/pixel_models``) cuts its tiles with the same functions, so
the model sees at inference what it was trained on.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from PIL import Image

from video_env.video.base import FrameArray, Size

__all__ = ["INPUT_SIZE", "TILE_GRIDS", "cut_tile", "tile_boxes", "tiles"]

#: Model input size (width, height) of the pixel-real CLIP.
INPUT_SIZE = Size(160, 96)
#: Tile grids the VLM role looks through: ``g`` rows of tiles ``1/g`` of the frame high.
TILE_GRIDS = (1, 2, 3)


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
