"""Fixed-speed pacing baselines on the Pacing env's sensor readings."""

from __future__ import annotations

from typing import Any

from policies.base import Policy
from policies.observations import window_of
from video_env.actions import AnswerAction, SpeedAction
from video_env.types import Interval


class FixedSpeedPolicy(Policy):
    """Reads the video at one speed, optionally stopping once the sensor is confident.

    Keeps the most confident sensor (VLM) reading of the episode and answers with it and
    the window it was read on, when the video ends or when a reading reaches
    ``threshold``.

    Args:
        speed: 1, 2 or 4.
        threshold: Stop at this sensor confidence (``None``: read to the end).
    """

    env_kinds = ("pacing",)

    def __init__(self, speed: int = 1, threshold: float | None = None) -> None:
        super().__init__()
        self.speed = speed
        self.threshold = threshold
        self.name = f"pacing-{speed}x" if threshold is None else f"pacing-{speed}x@{threshold:g}"
        self._best: tuple[float, str, Interval] = (-1.0, "", Interval(0, 0))

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Forget the previous episode's readings."""
        self._best = (-1.0, "", Interval(0, 0))

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Go on at the fixed speed, or answer."""
        sensor = observation["sensor"]
        confidence = float(sensor["confidence"][0])
        if confidence > self._best[0]:
            self._best = (confidence, str(sensor["answer"]), window_of(observation["window"]))
        confident = self.threshold is not None and self._best[0] >= self.threshold
        if confident or "speed" not in info["legal_actions"]:
            _, text, window = self._best
            return AnswerAction(text or "unknown", window)
        return SpeedAction(self.speed)
