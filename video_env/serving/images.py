"""Frames as images: base64 ``data:`` URLs (JPEG or PNG), and back.

No OpenEnv here: the verifiers environments build their chat images with it too.
"""

from __future__ import annotations

import base64
import io
from typing import Literal

import numpy as np

__all__ = ["ImageFormat", "decode_frames", "encode_frames"]

ImageFormat = Literal["png", "jpeg"]


def encode_frames(frames: np.ndarray, image_format: ImageFormat = "jpeg") -> list[str]:
    """Frames (``uint8[N, H, W, 3]``) as base64 ``data:`` URLs."""
    from PIL import Image

    urls = []
    for frame in frames:
        buffer = io.BytesIO()
        if image_format == "png":
            Image.fromarray(frame).save(buffer, format="PNG", compress_level=1)
        else:
            Image.fromarray(frame).save(buffer, format="JPEG", quality=90)
        urls.append(
            f"data:image/{image_format};base64,{base64.b64encode(buffer.getvalue()).decode()}"
        )
    return urls


def decode_frames(urls: list[str]) -> list[np.ndarray]:
    """The frames of :func:`encode_frames`, as ``uint8[H, W, 3]`` arrays.

    Raises:
        ValueError: If a frame is not a base64 image ``data:`` URL.
    """
    from PIL import Image

    out = []
    for url in urls:
        head, sep, data = url.partition(",")
        if not (sep and head.startswith("data:image/") and head.endswith(";base64")):
            raise ValueError(f"not a base64 image data URL: {url[:40]!r}")
        with Image.open(io.BytesIO(base64.b64decode(data, validate=True))) as image:
            out.append(np.asarray(image.convert("RGB"), dtype=np.uint8))
    return out
