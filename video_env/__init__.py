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

# Gymnasium convention: importing the package registers its environment ids.
from video_env.envs.registration import ENV_IDS, register_envs

register_envs()

__all__ = [
    "ENV_IDS",
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
    "register_envs",
]
