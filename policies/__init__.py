"""Policies that act in video-env environments, and the one episode loop.

Example:
    >>> import gymnasium as gym, video_env, policies        # doctest: +SKIP
    >>> env = gym.make("VideoEnv/Zoom-v1")                  # doctest: +SKIP
    >>> record = policies.run_episode(env, policies.make("falconeye"), seed=0)  # doctest: +SKIP
"""

from policies.base import Policy, env_kind
from policies.registry import PolicySpec, available, make, register, register_class, spec
from policies.runner import run_episode

__all__ = [
    "Policy",
    "PolicySpec",
    "available",
    "env_kind",
    "make",
    "register",
    "register_class",
    "run_episode",
    "spec",
]
