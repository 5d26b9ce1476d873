"""Gymnasium registration of the environments (``import video_env`` registers them)."""

from __future__ import annotations

import gymnasium as gym

#: Registered ids and their entry points.
ENV_IDS = {
    "VideoEnv/Pacing-v0": "video_env.envs.pacing:PacingEnv",
    "VideoEnv/Zoom-v0": "video_env.envs.zoom:ZoomEnv",
    "VideoEnv/ClipQuery-v0": "video_env.envs.clip_query:ClipQueryEnv",
}


def register_envs() -> None:
    """Register every environment id (idempotent)."""
    for env_id, entry_point in ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point)
