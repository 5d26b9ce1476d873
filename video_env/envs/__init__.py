"""The environments and their registration with Gymnasium."""

from typing import cast

from gymnasium.envs.registration import load_env_creator

from video_env.envs.arguments import DEFAULT_SUITE
from video_env.envs.base import VideoQAEnv
from video_env.envs.clip_query import ClipQueryEnv
from video_env.envs.pacing import PacingEnv
from video_env.envs.pacing_rules import PacingRules, SpeedSpec
from video_env.envs.perception import Perception
from video_env.envs.registration import ENTRY_POINTS, latest_id
from video_env.envs.zoom import ZoomEnv
from video_env.envs.zoom_rules import BUDGET_FLASH, BUDGET_PRO, ZoomRules


def _registered_classes() -> dict[str, tuple[str, type[VideoQAEnv]]]:
    """Each registered env's name and class, by the kind the class declares."""
    found = {}
    for name, entry in ENTRY_POINTS.items():
        cls = cast(type[VideoQAEnv], load_env_creator(entry))
        found[cls.kind] = (name, cls)
    return found


_REGISTERED = _registered_classes()
#: Each env kind's class, by the kind it declares (``PacingEnv.kind``): the one list of
#: env kinds, read from the registered entry points.
ENV_CLASSES: dict[str, type[VideoQAEnv]] = {kind: cls for kind, (_, cls) in _REGISTERED.items()}
#: The env kinds, in registration order.
ENV_KINDS: tuple[str, ...] = tuple(ENV_CLASSES)
#: The latest Gymnasium id of each env kind (``"pacing"`` → ``"VideoEnv/Pacing-v1"``).
ENV_IDS_BY_KIND: dict[str, str] = {kind: latest_id(name) for kind, (name, _) in _REGISTERED.items()}

__all__ = [
    "BUDGET_FLASH",
    "BUDGET_PRO",
    "DEFAULT_SUITE",
    "ENV_CLASSES",
    "ENV_IDS_BY_KIND",
    "ENV_KINDS",
    "ClipQueryEnv",
    "PacingEnv",
    "PacingRules",
    "Perception",
    "SpeedSpec",
    "VideoQAEnv",
    "ZoomEnv",
    "ZoomRules",
]
