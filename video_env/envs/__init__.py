"""The environments and their registration with Gymnasium."""

from video_env.envs.arguments import DEFAULT_SUITE
from video_env.envs.base import VideoQAEnv
from video_env.envs.clip_query import ClipQueryEnv
from video_env.envs.pacing import PacingEnv
from video_env.envs.pacing_rules import PacingRules, SpeedSpec
from video_env.envs.perception import Perception
from video_env.envs.zoom import ZoomEnv
from video_env.envs.zoom_rules import BUDGET_FLASH, BUDGET_PRO, ZoomRules

#: Each env kind's class, by the kind benchmarks, records and tasks name it with.
ENV_CLASSES: dict[str, type[VideoQAEnv]] = {
    "pacing": PacingEnv,
    "zoom": ZoomEnv,
    "clip_query": ClipQueryEnv,
}

__all__ = [
    "BUDGET_FLASH",
    "BUDGET_PRO",
    "DEFAULT_SUITE",
    "ENV_CLASSES",
    "ClipQueryEnv",
    "PacingEnv",
    "PacingRules",
    "Perception",
    "SpeedSpec",
    "VideoQAEnv",
    "ZoomEnv",
    "ZoomRules",
]
