"""Video reading: TorchCodec, decord or PyAV (the first installed), a frame cache, a writer.

Example:
    >>> from video_env.video import open_video          # doctest: +SKIP
    >>> with open_video("talk.mp4") as video:            # doctest: +SKIP
    ...     frames = video.frames([0.0, 12.5], size=(448, 448))
"""

from video_env.video.base import FrameArray, Size, Times, VideoReader
from video_env.video.cache import DEFAULT_CACHE_BYTES, FrameCache
from video_env.video.open import DECODERS, available_decoders, default_decoder, open_video
from video_env.video.resize import Resize
from video_env.video.sampling import frame_size, qwen_visual_tokens, uniform_times
from video_env.video.writer import write_video

__all__ = [
    "DECODERS",
    "DEFAULT_CACHE_BYTES",
    "FrameArray",
    "FrameCache",
    "Resize",
    "Size",
    "Times",
    "VideoReader",
    "available_decoders",
    "default_decoder",
    "frame_size",
    "open_video",
    "qwen_visual_tokens",
    "uniform_times",
    "write_video",
]
