"""A video-env environment as an OpenEnv ``Environment`` (one per server session).

:class:`VideoEnvironment` builds its Gymnasium environment on the first ``reset`` (the
server also builds throw-away instances for ``/state`` and ``/metadata``), applies wire
actions (:mod:`video_env.serving.wire`) and returns wire observations. Its ``close``
drops the Gymnasium environment, so a session the server ends (client gone, idle past
the timeout) frees its memory even while a handler still holds the object; a later call
on it is refused as an expired session. :class:`SessionCounter` counts the live ones
(``/sessions``, and the leak test).
"""

from __future__ import annotations

import functools
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from video_env.envs.base import VideoQAEnv
from video_env.errors import ConfigError, VideoEnvError
from video_env.serving.images import ImageFormat
from video_env.serving.wire import (
    VideoObservation,
    VideoState,
    WireAction,
    encode_frames,
    encode_value,
    json_safe,
    reset_arguments,
    to_env_action,
)
from video_env.wrappers.text_actions import parse_text_action

__all__ = ["OneThreadVideoEnvironment", "SessionCounter", "SessionError", "VideoEnvironment"]


class SessionError(VideoEnvError):
    """A call the session cannot serve now (no episode, episode over, session expired)."""


@dataclass
class SessionCounter:
    """What one server's sessions share: counts, and the observation space.

    Pacing's pixel ``Box`` holds four full-size arrays (about 48 MB with the paper's
    rules): one copy serves every session, as the server never samples it.
    """

    created: int = 0
    closed: int = 0
    observation_space: Any = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def active(self) -> int:
        """Environments built and not yet closed."""
        with self.lock:
            return self.created - self.closed

    def opened(self) -> None:
        """Count one more built environment."""
        with self.lock:
            self.created += 1

    def ended(self) -> None:
        """Count one more closed environment."""
        with self.lock:
            self.closed += 1


class VideoEnvironment(Environment[WireAction, VideoObservation, VideoState]):
    """One session's environment.

    Args:
        env_id: A registered id (``"VideoEnv/Pacing-v0"``...).
        env_kwargs: Arguments of the environment (any, e.g. ``rules=``, ``dataset=``).
        image_format: How frames travel: ``"png"`` (lossless) or ``"jpeg"``.
        counter: Counts built and closed environments.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self,
        env_id: str,
        env_kwargs: dict[str, Any] | None = None,
        *,
        image_format: ImageFormat = "jpeg",
        counter: SessionCounter | None = None,
    ) -> None:
        super().__init__()
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.image_format = image_format
        self.counter = counter
        self._env: VideoQAEnv | None = None
        self._action_set: Any = None
        self._state = VideoState(env_id=env_id)
        self._last: dict[str, Any] = {}
        self._closed = False

    # -- OpenEnv API -----------------------------------------------------------------

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        index: int | None = None,
        sample_id: str | None = None,
        **kwargs: Any,
    ) -> VideoObservation:
        """Start an episode on sample ``index``, ``sample_id``, or a random one.

        Raises:
            pydantic.ValidationError: For arguments an HTTP ``/reset`` would refuse
                (:func:`~video_env.serving.wire.reset_arguments`), however they came.
        """
        checked = reset_arguments(  # an unknown key is refused, never ignored
            seed=seed, episode_id=episode_id, index=index, sample_id=sample_id, **kwargs
        )
        seed, episode_id, index, sample_id = (
            checked.seed, checked.episode_id, checked.index, checked.sample_id
        )  # fmt: skip
        env = self._require_env()
        options: dict[str, Any] = {}
        if sample_id is not None:
            ids = [s.id for s in env.samples]
            if sample_id not in ids:
                raise ConfigError(f"unknown sample_id {sample_id!r} ({len(ids)} samples served)")
            options["index"] = ids.index(sample_id)
        elif index is not None:
            options["index"] = index
        try:
            observation, info = env.reset(seed=seed, options=options)
        except (IndexError, TypeError) as exc:
            raise ConfigError(f"reset: {exc}") from exc
        self._state = VideoState(
            episode_id=episode_id or str(uuid.uuid4()),
            env_id=self.env_id,
            sample_id=env.sample.id,
            turn=0,
            done=False,
        )
        return self._observe(observation, 0.0, False, False, info)

    def step(
        self, action: WireAction, timeout_s: float | None = None, **kwargs: Any
    ) -> VideoObservation:
        """Apply a wire action (``abandon`` ends the episode without an answer)."""
        self._check_open()
        if self._state.done:  # before building anything: a stateless /step has no episode
            raise SessionError("no episode is running: send reset first")
        env = self._require_env()
        kind = getattr(action, "kind", None)
        if kind == "abandon":
            record = env.abandon(action.reason)
            self._state = self._state.model_copy(update={"done": True})
            return self._observe(self._last, 0.0, False, True, {"episode": record})
        if kind == "text":
            if self._action_set is None:
                self._action_set = env.text_action_set()
            env_action = parse_text_action(self._action_set, action.text or "", action.strict)
        else:
            env_action = to_env_action(action)
        observation, reward, terminated, truncated, info = env.step(env_action)
        done = bool(terminated or truncated)
        self._state = self._state.model_copy(
            update={
                "turn": self._state.turn + 1,
                "step_count": self._state.step_count + 1,
                "done": done,
            }
        )
        return self._observe(observation, float(reward), terminated, truncated, info)

    @property
    def state(self) -> VideoState:
        """The session's state."""
        state: VideoState = self._state.model_copy(update={"expired": self._closed})
        return state

    def get_metadata(self) -> EnvironmentMetadata:
        """The served environment's name and what it is."""
        from video_env import __version__

        return EnvironmentMetadata(
            name=self.env_id,
            description=f"video-env {self.env_id} (Gymnasium), one environment per session",
            version=__version__,
        )

    def close(self) -> None:
        """Free the Gymnasium environment; later calls are refused as expired."""
        if self._closed:
            return
        self._closed = True
        if self._env is not None:
            self._env.close()
            self._env = None
            self._last = {}
            if self.counter is not None:
                self.counter.ended()
            _release_free_memory()

    # -- helpers -------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SessionError(
                "this session has expired (closed by the server: idle past its timeout, or "
                "shutting down); open a new session"
            )

    def _require_env(self) -> VideoQAEnv:
        self._check_open()
        if self._env is None:
            env = gym.make(self.env_id, disable_env_checker=True, **self.env_kwargs).unwrapped
            if not isinstance(env, VideoQAEnv):
                raise ConfigError(f"{self.env_id} is not a video-env environment")
            self._env = env
            if self.counter is not None:
                self.counter.opened()
                with self.counter.lock:
                    if self.counter.observation_space is None:
                        self.counter.observation_space = env.observation_space
                    env.observation_space = self.counter.observation_space
                _release_free_memory()  # the space built and dropped
        return self._env

    def _observe(
        self,
        observation: dict[str, Any],
        reward: float,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
    ) -> VideoObservation:
        self._last = observation
        rest = dict(observation)
        frames = rest.get("frames")
        urls: list[str] = []
        shape = None
        if isinstance(frames, np.ndarray):  # Pacing's pixels (ClipQuery's are captions)
            del rest["frames"]
            shape = list(frames.shape)
            env = self._env  # its hook: the valid frames, cropped to their real size
            shown = env.observation_images(observation) if env is not None else []
            urls = encode_frames(np.stack(shown), self.image_format) if shown else []
        return VideoObservation(
            observation=encode_value(rest),
            frames=urls,
            frames_shape=shape,
            info=json_safe(info),
            terminated=bool(terminated),
            truncated=bool(truncated),
            reward=reward,
            done=bool(terminated or truncated),
        )


class OneThreadVideoEnvironment(VideoEnvironment):
    """:class:`VideoEnvironment` whose calls, all sessions', run on one worker thread.

    OpenEnv gives each session its own worker thread by default; with dozens of sessions
    those threads contend for the GIL (measured: ``benchmarks/perf/remote_envs.py``). One
    thread avoids that, but a slow call (a long decode) then delays the process's other
    sessions: use one process per core (``video-env serve --reuse-port``).
    """

    REQUIRES_SINGLE_THREAD_EXECUTOR = True


def _release_free_memory() -> None:
    """Give freed heap memory back to the system (glibc's ``malloc_trim``; else nothing).

    Frames are arrays of megabytes; once glibc has freed one such mmap'd block it raises
    its mmap threshold and serves the next ones from the heap, whose free space it keeps:
    without a trim a server's resident memory stays at its peak after sessions end.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    """Glibc's ``malloc_trim``, or None where there is none."""
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
