"""Structured actions and the text action sets that parse LLM replies into them."""

from video_env.actions.base import ActionSet
from video_env.actions.clip_query import ClipQueryActionSet
from video_env.actions.pacing import PacingActionSet
from video_env.actions.parsing import ActionParseError
from video_env.actions.types import (
    Action,
    AnswerAction,
    EvaluateAction,
    InvalidAction,
    QueryAction,
    RewatchAction,
    SegmentQuery,
    SpeedAction,
    describe_action,
)
from video_env.actions.zoom import ZoomActionSet

__all__ = [
    "Action",
    "ActionParseError",
    "ActionSet",
    "AnswerAction",
    "ClipQueryActionSet",
    "EvaluateAction",
    "InvalidAction",
    "PacingActionSet",
    "QueryAction",
    "RewatchAction",
    "SegmentQuery",
    "SpeedAction",
    "ZoomActionSet",
    "describe_action",
]
