"""Clients of the environment server.

:class:`VideoEnvClient` is OpenEnv's ``EnvClient`` for it (async; ``.sync()`` for
blocking calls): one instance, one session on the server. :class:`RemoteVideoEnv` wraps
it in the in-process environment's calls — ``reset(seed, options)`` → ``(observation,
info)``, ``step(action)`` → the Gymnasium 5-tuple, ``abandon(reason)`` — where the
observation is the same dict of arrays the in-process environment returns (frames
rebuilt from the images: identical with PNG), so policies run unchanged against a
remote environment. Actions may be the dataclasses of :mod:`video_env.actions`, an
LLM's raw reply (``str``: parsed on the server) or a wire action.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from video_env._closing import Closing
from video_env.actions.types import (
    AnswerAction,
    EvaluateAction,
    InvalidAction,
    QueryAction,
    RewatchAction,
    SpeedAction,
)
from video_env.errors import ConfigError
from video_env.serving.wire import (
    PacingWireAction,
    VideoObservation,
    VideoState,
    WireAction,
    action_model,
    decode_frames,
    decode_value,
)

__all__ = ["RemoteVideoEnv", "VideoEnvClient", "observation_arrays", "wire_action"]


class VideoEnvClient(EnvClient[WireAction, VideoObservation, VideoState]):
    """OpenEnv's client of a video-env server (``base_url``: ``http://host:port``)."""

    def _step_payload(self, action: WireAction) -> dict[str, Any]:
        payload: dict[str, Any] = action.model_dump(exclude_none=True, exclude={"metadata"})
        return payload

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[VideoObservation]:
        fields = dict(payload.get("observation", {}))
        fields.pop("metadata", None)
        observation = VideoObservation(
            **fields, reward=payload.get("reward"), done=bool(payload.get("done", False))
        )
        return StepResult(
            observation=observation, reward=payload.get("reward"), done=observation.done
        )

    def _parse_state(self, payload: dict[str, Any]) -> VideoState:
        return VideoState(**payload)


def observation_arrays(observation: VideoObservation) -> dict[str, Any]:
    """The Gymnasium observation of a wire observation (frames back in their array)."""
    out: dict[str, Any] = decode_value(observation.observation)
    if observation.frames_shape is not None:
        frames = np.zeros(tuple(observation.frames_shape), dtype=np.uint8)
        for i, pixels in enumerate(decode_frames(observation.frames)):
            h, w = pixels.shape[:2]
            frames[i, :h, :w] = pixels
        out["frames"] = frames
    return out


def wire_action(action: Any, env_class: str) -> WireAction:
    """A wire action of ``env_class`` (``"PacingEnv"``...) from an env action or text.

    Raises:
        ConfigError: For an action the env class has no wire form of.
    """
    if isinstance(action, WireAction):
        return action
    model = action_model(env_class)
    fields: dict[str, Any]
    if isinstance(action, str):
        fields = {"kind": "text", "text": action}
    elif isinstance(action, InvalidAction):
        fields = {"kind": "text", "text": action.raw or ""}
    elif isinstance(action, AnswerAction):
        window = None if action.window is None else (action.window.start, action.window.end)
        fields = {"kind": "answer", "answer": action.text, "window": window}
        if action.memory is not None and model is PacingWireAction:
            fields["memory"] = action.memory
    elif isinstance(action, SpeedAction):
        fields = {"kind": "speed", "factor": action.factor, "memory": action.memory}
    elif isinstance(action, RewatchAction):
        fields = {"kind": "rewatch", "chunk": action.chunk, "memory": action.memory}
    elif isinstance(action, EvaluateAction):
        fields = {"kind": "evaluate", "windows": [(w.start, w.end) for w in action.windows]}
    elif isinstance(action, QueryAction):
        queries = [{"segment": q.segment, "text": q.text} for q in action.queries]
        fields = {"kind": "query", "queries": queries}
    else:
        raise ConfigError(f"no wire form for {type(action).__name__}")
    try:
        return model(**{k: v for k, v in fields.items() if v is not None})
    except ValueError as exc:  # pydantic: e.g. a speed action for Zoom
        raise ConfigError(f"{type(action).__name__} is not a {env_class} action: {exc}") from exc


class RemoteVideoEnv(Closing):
    """A remote session with the in-process environment's calls (see the module docstring).

    Args:
        base_url: The server, ``http://127.0.0.1:8000``.
        env_class: The served environment's class (``"PacingEnv"``, ``"ZoomEnv"``,
            ``"ClipQueryEnv"``): which wire actions to build.
        message_timeout_s: Seconds to wait for a reply.
    """

    def __init__(
        self, base_url: str, env_class: str = "PacingEnv", *, message_timeout_s: float = 60.0
    ) -> None:
        self.base_url = base_url
        self.env_class = env_class
        self.client = VideoEnvClient(base_url=base_url, message_timeout_s=message_timeout_s).sync()
        self.last: VideoObservation | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode on ``options["index"]`` or ``options["sample_id"]``."""
        options = dict(options or {})
        if "sample" in options:
            raise ConfigError("a remote env picks samples by index or sample_id, not object")
        kwargs: dict[str, Any] = {k: options[k] for k in ("index", "sample_id") if k in options}
        if seed is not None:
            kwargs["seed"] = seed
        result = self.client.reset(**kwargs)
        self.last = result.observation
        return observation_arrays(result.observation), dict(result.observation.info)

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Apply an action; the Gymnasium 5-tuple."""
        result = self.client.step(wire_action(action, self.env_class))
        obs = result.observation
        self.last = obs
        reward = float(result.reward or 0.0)
        return observation_arrays(obs), reward, obs.terminated, obs.truncated, dict(obs.info)

    def abandon(self, reason: str) -> dict[str, Any]:
        """End the episode without an answer; its record."""
        result = self.client.step(action_model(self.env_class)(kind="abandon", reason=reason))
        self.last = result.observation
        record: dict[str, Any] = result.observation.info["episode"]
        return record

    def state(self) -> VideoState:
        """The session's state on the server."""
        state: VideoState = self.client.state()
        return state

    def close(self) -> None:
        """End the session (the server frees its environment)."""
        self.client.close()
