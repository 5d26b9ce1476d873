"""The policy protocol: what every agent (scripted, LLM-prompted, learned) implements."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import gymnasium as gym

from video_env.backends.llm.base import LLM
from video_env.metrics.cost import Cost


def env_kind(env: gym.Env[Any, Any]) -> str:
    """The kind a (possibly wrapped) env declares (``"pacing"``), else its class's name."""
    inner = env.unwrapped
    return str(getattr(inner, "kind", type(inner).__name__))


class Policy(abc.ABC):
    """Maps observations to actions; reports its own costs.

    A policy sees observations and ``info`` only, never the episode's annotations. It is
    reset with the first observation, then asked for one action per step. LLM usage is
    accumulated in ``usage`` (calls, tokens, money); the episode runner records it per step.

    Subclasses set ``name``, ``env_kinds`` and implement :meth:`act` (and :meth:`reset`
    when they keep state).

    Attributes:
        name: Name shown in result tables.
        env_kinds: Environment kinds it supports (``video_env.envs.ENV_KINDS``).
        offline: Whether it runs without an LLM.
        env_kwargs: Environment settings it needs (e.g. a larger evaluation budget).
    """

    name: str = "policy"
    env_kinds: ClassVar[tuple[str, ...]] = ()
    offline: ClassVar[bool] = True
    env_kwargs: Mapping[str, Mapping[str, Any]] = MappingProxyType({})

    def __init__(self, llm: LLM | None = None) -> None:
        self.llm = llm
        self._own_usage = Cost()

    @property
    def usage(self) -> Cost:
        """LLM costs so far (the LLM's own usage when the policy has one)."""
        if self.llm is not None:
            return self._own_usage + self.llm.usage
        return self._own_usage

    @property
    def reply_failures(self) -> int:
        """LLM replies the policy could not use so far (re-asked, then a fallback)."""
        caller = getattr(self, "caller", None)
        return int(getattr(caller, "failures", 0))

    @property
    def replies_used(self) -> int:
        """LLM replies the policy used so far (a reply rejected and re-asked is not one)."""
        caller = getattr(self, "caller", None)
        return int(getattr(caller, "used", 0))

    @property
    def perceivers(self) -> tuple[Any, ...]:
        """Models the policy perceives the video with itself (default: none, the env's).

        Their labels join the episode record's (:func:`~policies.runner.run_episode`): a
        simulated one makes the episode ``simulated``, the pixel VLM makes it
        ``pixel_vlm``, a random-weights folder ``random_weights``.
        """
        return ()

    def supports(self, env: gym.Env[Any, Any]) -> bool:
        """Whether the policy can act in ``env``."""
        return env_kind(env) in self.env_kinds

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:  # noqa: B027
        """Start an episode (default: nothing to forget)."""

    @abc.abstractmethod
    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """The next action."""
