"""The environments and their registration with Gymnasium."""

from video_env.envs.base import DEFAULT_SUITE, VideoQAEnv
from video_env.envs.pacing import PacingEnv
from video_env.envs.pacing_rules import PacingRules, SpeedSpec
from video_env.envs.perception import Perception

__all__ = ["DEFAULT_SUITE", "PacingEnv", "PacingRules", "Perception", "SpeedSpec", "VideoQAEnv"]
