"""A stable-baselines3 view of the Pacing env: a feature vector, a discrete action, masks.

Learned pacing policies decide *how fast to read and when to stop*; what to answer comes
from the env's sensor (the VLM reading of each window). The features, the action masks
and the answer are computed by :class:`PacingFeatureTracker` from the observation and
``info`` alone, so a trained model runs unchanged as a benchmark policy (which sees
observations only) and inside this wrapper during training.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from video_env.actions.types import AnswerAction, RewatchAction, SpeedAction
from video_env.envs.pacing import PacingEnv
from video_env.errors import ConfigError
from video_env.types import Interval

#: Discrete actions: speed 1x/2x/4x, rewatch the 1st..4th chunk of the window, answer.
ACTIONS = ("speed1", "speed2", "speed4", "rewatch1", "rewatch2", "rewatch3", "rewatch4", "answer")
FEATURES = (
    "progress",
    "speed_1x",
    "speed_2x",
    "speed_4x",
    "rewatching",
    "window_start",
    "window_end",
    "confidence",
    "best_confidence",
    "best_window_end",
    "relevance_1",
    "relevance_2",
    "relevance_3",
    "relevance_4",
    "turn",
    "invalid_actions",
    "video_chunks",
)
_TURN_SCALE = 64.0
_INVALID_SCALE = 4.0  # the default allowance (3) plus the one that ends the episode
_CHUNK_SCALE = 128.0


class PacingFeatureTracker:
    """Features, legal-action masks and the answer of a Pacing episode, from observations.

    Reads only what the env shows (``progress``, ``speed``, ``rewatching``, ``chunks``,
    ``n_chunks``, ``window``, ``turn``, ``sensor``; ``info["legal_actions"]`` and
    ``info["invalid_actions"]``) and keeps the most confident sensor reading of the
    episode, which ``answer`` uses. Call :meth:`reset` with the first observation of an
    episode and :meth:`observe` with every later one.
    """

    def __init__(self) -> None:
        self.best: tuple[float, str, Interval, float] = (-1.0, "", Interval(0, 0), 0.0)
        self._obs: dict[str, Any] = {}
        self._info: dict[str, Any] = {}

    def reset(self, obs: dict[str, Any], info: dict[str, Any]) -> npt.NDArray[np.float32]:
        """Forget the previous episode; the features of ``obs``."""
        self.best = (-1.0, "", Interval(0, 0), 0.0)
        return self.observe(obs, info)

    def observe(self, obs: dict[str, Any], info: dict[str, Any]) -> npt.NDArray[np.float32]:
        """Take in a new observation; its features (``float32[len(FEATURES)]`` in [-1, 1])."""
        self._obs, self._info = obs, info
        sensor = obs["sensor"]
        n_chunks = max(1, int(obs["n_chunks"][0]))
        first, last = (int(c) for c in obs["chunks"])
        confidence = float(sensor["confidence"][0])
        if confidence > self.best[0]:
            window = Interval(float(obs["window"][0]), max(*(float(v) for v in obs["window"])))
            self.best = (confidence, str(sensor["answer"]), window, last / n_chunks)
        speed = np.zeros(3, dtype=np.float32)
        speed[int(obs["speed"])] = 1.0
        values = [
            float(obs["progress"][0]),
            *speed,
            float(obs["rewatching"]),
            (first - 1) / n_chunks,
            last / n_chunks,
            confidence,
            max(self.best[0], 0.0),
            self.best[3],
            *(float(v) for v in sensor["relevance"]),
            min(1.0, float(obs["turn"][0]) / _TURN_SCALE),
            min(1.0, int(info.get("invalid_actions", 0)) / _INVALID_SCALE),
            min(1.0, n_chunks / _CHUNK_SCALE),
        ]
        return np.clip(np.asarray(values, dtype=np.float32), -1.0, 1.0)

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Legal :data:`ACTIONS` now (``answer`` is always legal)."""
        mask = np.zeros(len(ACTIONS), dtype=bool)
        mask[-1] = True
        legal = self._info.get("legal_actions", ["speed", "answer"])
        if "speed" in legal:
            mask[:3] = True
        if "rewatch" in legal:
            first, last = (int(c) for c in self._obs["chunks"])
            mask[3 : 3 + min(4, last - first + 1)] = True
        return mask

    def action(self, index: int) -> SpeedAction | RewatchAction | AnswerAction:
        """The env action of ``ACTIONS[index]`` (answer: the most confident reading)."""
        name = ACTIONS[int(index)]
        if name.startswith("speed"):
            return SpeedAction(int(name[-1]))
        if name.startswith("rewatch"):
            return RewatchAction(int(self._obs["chunks"][0]) + int(name[-1]) - 1)
        _, text, window, _ = self.best
        return AnswerAction(text or "A", window if window.length > 0 else None)


class PacingFeatures(gym.Wrapper[Any, Any, Any, Any]):
    """Box/Discrete-only Pacing for SB3 (``MaskablePPO`` via :meth:`action_masks`).

    Observation: ``float32[17]`` in ``[-1, 1]`` named by :data:`FEATURES` (CLIP
    relevances are -1 when the env has no CLIP sensor). Action: ``Discrete(8)`` named by
    :data:`ACTIONS`; ``answer`` uses the most confident sensor reading so far; the
    ``rewatchK`` actions are legal after a multi-chunk (2x or 4x) turn. An illegal action
    is reported by the env as invalid (penalty, error allowance).

    Args:
        env: A :class:`PacingEnv` (possibly wrapped) with the ``vlm`` sensor.
    """

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        base = env.unwrapped
        if not isinstance(base, PacingEnv) or "vlm" not in base.sensors:
            raise ConfigError("PacingFeatures needs a PacingEnv with the 'vlm' sensor")
        self.pacing = base
        self.tracker = PacingFeatureTracker()
        self.observation_space = spaces.Box(-1.0, 1.0, (len(FEATURES),), np.float32)
        self.action_space = spaces.Discrete(len(ACTIONS))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[npt.NDArray[np.float32], dict[str, Any]]:
        """Reset the env and the best reading."""
        obs, info = self.env.reset(seed=seed, options=options)
        return self.tracker.reset(obs, info), info

    def step(
        self, action: int
    ) -> tuple[npt.NDArray[np.float32], float, bool, bool, dict[str, Any]]:
        """Step with a discrete action."""
        obs, reward, terminated, truncated, info = self.env.step(self.tracker.action(action))
        return self.tracker.observe(obs, info), float(reward), terminated, truncated, info

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Legal actions now (for sb3-contrib's MaskablePPO)."""
        return self.tracker.action_masks()
