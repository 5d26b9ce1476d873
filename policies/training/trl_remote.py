"""TRL's ``environment_factory`` with the Pacing env on a server (``video-env serve``).

The same :class:`~policies.training.trl_env.PacingToolEnv`, its episodes in sessions of a
remote Pacing server instead of in the trainer's process: the same tools (``speed``,
``rewatch``, ``answer``), the same chat text and frames (built here from the remote
observation by VideoScout's prompt), the same reward (the server's env computes it). Each
episode is one WebSocket session; the frames travel as images (JPEG by default, see
:mod:`video_env.serving.wire`). One env factory,
:class:`~policies.training.adapter.RemotePacingEnv`, is all that differs.

The server must serve the trainer's questions under the same rules, with frames and no
sensors, e.g. ``video-env serve VideoEnv/Pacing-v1 --dataset SUITE --pixel-observations
--env-kwargs '{"sensors": []}'`` (or :func:`~policies.training.adapter.server_env_kwargs`
for :func:`~video_env.serving.server.make_app`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from policies.episode_settings import EpisodeSettings
from policies.training.adapter import RemotePacingEnv, server_env_kwargs
from policies.training.trl_env import PacingToolEnv, pacing_env_factory
from video_env.types import VideoQA

__all__ = ["RemotePacingEnv", "remote_pacing_env_factory", "server_env_kwargs"]


def remote_pacing_env_factory(
    samples: Sequence[VideoQA],
    base_url: str,
    settings: EpisodeSettings | None = None,
    *,
    seed: int = 0,
) -> Callable[[], PacingToolEnv]:
    """The ``environment_factory`` of tool envs whose episodes run on ``base_url``."""
    return pacing_env_factory(samples, settings, seed=seed, make_env=RemotePacingEnv(base_url))
