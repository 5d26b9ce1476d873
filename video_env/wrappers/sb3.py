"""A stable-baselines3 view of the Pacing env: a feature vector, a discrete action, masks.

Learned pacing policies decide *how fast to read and when to stop*; what to answer comes
from the env's sensor (the VLM reading of each window). The wrapper keeps the most
confident sensor reading of the episode and answers with it and its window.
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
)
_TURN_SCALE = 64.0


class PacingFeatures(gym.Wrapper[Any, Any, Any, Any]):
    """Box/Discrete-only Pacing for SB3 (``MaskablePPO`` via :meth:`action_masks`).

    Observation: ``float32[16]`` in ``[-1, 1]`` named by :data:`FEATURES` (CLIP
    relevances are -1 when the env has no CLIP sensor). Action: ``Discrete(8)`` named by
    :data:`ACTIONS`; ``answer`` uses the most confident sensor reading so far.

    Args:
        env: A :class:`PacingEnv` (possibly wrapped) with the ``vlm`` sensor.
    """

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        base = env.unwrapped
        if not isinstance(base, PacingEnv) or "vlm" not in base.sensors:
            raise ConfigError("PacingFeatures needs a PacingEnv with the 'vlm' sensor")
        self.pacing = base
        self.observation_space = spaces.Box(-1.0, 1.0, (len(FEATURES),), np.float32)
        self.action_space = spaces.Discrete(len(ACTIONS))
        self._best = (0.0, "", Interval(0, 0))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[npt.NDArray[np.float32], dict[str, Any]]:
        """Reset the env and the best reading."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._best = (-1.0, "", Interval(0, 0))
        return self._features(obs), info

    def step(
        self, action: int
    ) -> tuple[npt.NDArray[np.float32], float, bool, bool, dict[str, Any]]:
        """Step with a discrete action (an illegal one is reported by the env as invalid)."""
        name = ACTIONS[int(action)]
        if name.startswith("speed"):
            parsed: Any = SpeedAction(int(name[-1]))
        elif name.startswith("rewatch"):
            parsed = RewatchAction(self.pacing.window_chunks[0] + int(name[-1]) - 1)
        else:
            _, text, window = self._best
            parsed = AnswerAction(text or "A", window if window.length > 0 else None)
        obs, reward, terminated, truncated, info = self.env.step(parsed)
        return self._features(obs), float(reward), terminated, truncated, info

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Legal actions now (for sb3-contrib's MaskablePPO)."""
        env = self.pacing
        mask = np.zeros(len(ACTIONS), dtype=bool)
        mask[-1] = True
        if env.pointer > len(env.chunks):
            return mask  # the end of the video: only answer
        mask[:3] = True
        first, last = env.window_chunks
        if not env.rewatching and last > first:
            mask[3 : 3 + (last - first + 1)] = True
        return mask

    def _features(self, obs: dict[str, Any]) -> npt.NDArray[np.float32]:
        env = self.pacing
        duration = env.video.duration
        sensor = obs["sensor"]
        confidence = float(sensor["confidence"][0])
        if confidence > self._best[0]:
            self._best = (confidence, str(sensor["answer"]), env.window)
        speed = np.zeros(3, dtype=np.float32)
        speed[int(obs["speed"])] = 1.0
        episode = env._episode
        invalid = episode.invalid_actions if episode is not None else 0
        values = [
            float(obs["progress"][0]),
            *speed,
            float(obs["rewatching"]),
            env.window.start / duration,
            env.window.end / duration,
            confidence,
            self._best[0],
            self._best[2].end / duration,
            *(float(v) for v in sensor["relevance"]),
            min(1.0, float(obs["turn"][0]) / _TURN_SCALE),
            min(1.0, invalid / max(1, env.max_invalid_actions + 1)),
        ]
        return np.clip(np.asarray(values, dtype=np.float32), -1.0, 1.0)
