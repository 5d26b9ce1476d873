"""Trained stable-baselines3 pacing policies as benchmark policies (``pacing-ppo:PATH``).

A saved policy is a folder (or its ``policy.zip``) written by ``video-env train pacing``:
``policy.zip`` (the SB3 model) and ``policy.json`` (algorithm, sensors, training settings).
The policy computes the same features and action masks as the training wrapper
(:class:`~video_env.wrappers.PacingFeatureTracker`) from observations and ``info`` only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from policies.base import Policy
from video_env._optional import require
from video_env.errors import ConfigError
from video_env.wrappers.sb3 import PacingFeatureTracker

#: Algorithms by CLI name: (module, class).
ALGOS: dict[str, tuple[str, str]] = {
    "maskable-ppo": ("sb3_contrib", "MaskablePPO"),
    "ppo": ("stable_baselines3", "PPO"),
    "dqn": ("stable_baselines3", "DQN"),
}
MODEL_FILE, META_FILE = "policy.zip", "policy.json"


def algo_class(algo: str) -> Any:
    """The SB3 class of ``algo`` (imported lazily; the ``rl`` extra).

    Raises:
        ConfigError: For an unknown algorithm.
        BackendNotInstalled: Without the ``rl`` extra.
    """
    if algo not in ALGOS:
        raise ConfigError(f"unknown algorithm {algo!r}; known: {list(ALGOS)}")
    module, name = ALGOS[algo]
    return getattr(require(module, "rl", "learned pacing policies"), name)


def model_paths(path: str | Path) -> tuple[Path, Path]:
    """``(policy.zip, policy.json)`` of a saved policy given its folder or its zip."""
    path = Path(path)
    model = path / MODEL_FILE if path.is_dir() else path
    return model, model.with_suffix(".json")


def read_meta(path: str | Path) -> dict[str, Any]:
    """The metadata of a saved policy (``{}`` when it has no ``policy.json``)."""
    _, meta = model_paths(path)
    if not meta.is_file():
        return {}
    data: dict[str, Any] = json.loads(meta.read_text())
    return data


class SB3PacingPolicy(Policy):
    """A trained SB3 model driving the Pacing env (speed, rewatch, answer).

    Args:
        model: A loaded SB3 model, or the path of a saved policy.
        algo: Its algorithm (``maskable-ppo``, ``ppo``, ``dqn``); read from
            ``policy.json`` when ``None``.
        name: Name in result tables (default ``pacing-<algo>``).
        sensors: Sensors the model was trained with (read from ``policy.json``).
        deterministic: Take the most likely action.

    Raises:
        ConfigError: If the file is missing or the algorithm unknown.
    """

    env_kinds = ("pacing",)

    def __init__(
        self,
        model: Any,
        algo: str | None = None,
        *,
        name: str | None = None,
        sensors: tuple[str, ...] | None = None,
        deterministic: bool = True,
    ) -> None:
        super().__init__()
        if isinstance(model, (str, Path)):
            zip_path, _ = model_paths(model)
            if not zip_path.is_file():
                raise ConfigError(f"no trained pacing policy at {zip_path}")
            meta = read_meta(model)
            algo = algo or str(meta.get("algo", "maskable-ppo"))
            if sensors is None and "sensors" in meta:
                sensors = tuple(meta["sensors"])
            model = algo_class(algo).load(str(zip_path), device="cpu")
        self.model = model
        self.algo = algo or "maskable-ppo"
        self.masked = self.algo == "maskable-ppo"
        self.name = name or f"pacing-{self.algo}"
        self.sensors = tuple(sensors or ("vlm",))
        self.deterministic = deterministic
        kwargs = {} if self.sensors == ("vlm",) else {"sensors": self.sensors}
        self.env_kwargs: Mapping[str, Mapping[str, Any]] = MappingProxyType({"pacing": kwargs})
        self.tracker = PacingFeatureTracker()

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Forget the previous episode's readings."""
        self.tracker.reset(observation, info)

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """The model's action for the observation's features (masked when MaskablePPO)."""
        features = self.tracker.observe(observation, info)
        mask = self.tracker.action_masks()
        if self.masked:
            action, _ = self.model.predict(
                features, action_masks=mask, deterministic=self.deterministic
            )
        else:
            action, _ = self.model.predict(features, deterministic=self.deterministic)
        return self.tracker.action(int(action))


def load_pacing_policy(algo: str, path: str, **settings: Any) -> SB3PacingPolicy:
    """``pacing-<algo>:PATH`` in the registry: the saved policy at ``path``."""
    if not path:
        raise ConfigError(f"pacing-{algo} needs the saved policy's path: pacing-{algo}:PATH")
    return SB3PacingPolicy(path, algo, name=f"pacing-{algo}:{path}", **settings)
