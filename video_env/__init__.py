"""video-env: long videos as Gymnasium environments for video question-answering agents."""

from video_env.errors import (
    BackendError,
    BackendNotInstalled,
    ConfigError,
    DatasetError,
    InvalidActionError,
    UnknownNameError,
    VideoDecodeError,
    VideoEnvError,
)
from video_env.types import OPTION_LETTERS, Interval, SampleError, VideoQA, merge_intervals
from video_env.video import Resize, Size, VideoReader, open_video

__version__ = "0.1.0"

__all__ = [
    "OPTION_LETTERS",
    "BackendError",
    "BackendNotInstalled",
    "ConfigError",
    "DatasetError",
    "Interval",
    "InvalidActionError",
    "Resize",
    "SampleError",
    "Size",
    "UnknownNameError",
    "VideoDecodeError",
    "VideoEnvError",
    "VideoQA",
    "VideoReader",
    "__version__",
    "merge_intervals",
    "open_video",
]
