"""Wrappers: text actions for LLM policies, a feature view for stable-baselines3."""

from video_env.wrappers.sb3 import ACTIONS, FEATURES, PacingFeatures, PacingFeatureTracker
from video_env.wrappers.text_actions import TextActions, default_action_set

__all__ = [
    "ACTIONS",
    "FEATURES",
    "PacingFeatureTracker",
    "PacingFeatures",
    "TextActions",
    "default_action_set",
]
