"""Gymnasium registration of the environments (``import video_env`` registers them)."""

from __future__ import annotations

import gymnasium as gym

#: Entry points of the environments, by name: the one list of envs (each class declares
#: its kind, ``PacingEnv.kind``; ``video_env.envs.ENV_CLASSES`` reads them from here).
ENTRY_POINTS = {
    "Pacing": "video_env.envs.pacing:PacingEnv",
    "Zoom": "video_env.envs.zoom:ZoomEnv",
    "ClipQuery": "video_env.envs.clip_query:ClipQueryEnv",
    "Tools": "video_env.envs.tools:ToolsEnv",
}
#: Envs born at ``-v1`` (no ``-v0`` layout to keep).
_FIRST_VERSION = {"Tools": 1}
#: Registered ids and their entry points: ``-v1`` the latest observation layout, ``-v0``
#: the first (without ``option_list``; Pacing without ``duration``).
ENV_IDS = {
    f"VideoEnv/{name}-v{version}": entry_point
    for name, entry_point in ENTRY_POINTS.items()
    for version in range(_FIRST_VERSION.get(name, 0), 2)
}


def latest_id(name: str) -> str:
    """The registered id of the env ``name``'s latest version (``"VideoEnv/Pacing-v1"``)."""
    return f"VideoEnv/{name}-v1"


def register_envs() -> None:
    """Register every environment id (idempotent)."""
    for env_id, entry_point in ENV_IDS.items():
        if env_id not in gym.registry:
            version = int(env_id.rsplit("-v", 1)[1])
            gym.register(
                id=env_id, entry_point=entry_point, kwargs={"observation_version": version}
            )
