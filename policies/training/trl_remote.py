"""TRL's ``environment_factory`` with the Pacing env on a server (``video-env serve``).

:class:`RemotePacingToolEnv` is :class:`~policies.training.trl_env.PacingToolEnv` whose
episodes run in sessions of a remote Pacing server instead of in the trainer's process:
the same tools (``speed``, ``rewatch``, ``answer``), the same chat text and frames (built
here from the remote observation by VideoScout's prompt code), the same reward (the
server's env computes it). Each episode is one WebSocket session; the frames travel as
images (JPEG by default, see :mod:`video_env.serving.wire`).

The server must serve the trainer's questions under the same rules, with frames and no
sensors, e.g. ``video-env serve VideoEnv/Pacing-v1 --dataset SUITE --pixel-observations
--env-kwargs '{"sensors": []}'`` (or :func:`server_env_kwargs` for
:func:`~video_env.serving.server.make_app`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from policies.training.adapter import EngineModelSlot, PacingChatEnv
from policies.training.trl_env import PacingToolEnv, samples_by_id, tool_content
from policies.videoscout import VideoScoutPolicy
from video_env.envs.pacing_rules import PacingRules
from video_env.envs.rules_record import DEFAULT_LAYOUT, PromptLayout
from video_env.errors import ConfigError
from video_env.types import VideoQA

__all__ = [
    "RemotePacingChatEnv",
    "RemotePacingToolEnv",
    "remote_pacing_env_factory",
    "server_env_kwargs",
]


def server_env_kwargs(
    samples: Sequence[VideoQA] | str, rules: PacingRules | None = None
) -> dict[str, Any]:
    """The Pacing-env arguments a server needs for these questions and rules."""
    settings = dict(VideoScoutPolicy(EngineModelSlot(), rules=rules).env_kwargs["pacing"])
    return {"dataset": samples if isinstance(samples, str) else list(samples), **settings}


class RemotePacingChatEnv(PacingChatEnv):
    """:class:`PacingChatEnv` over a remote session (the question picked by its id).

    Args:
        sample: The question (only its id travels).
        base_url: The Pacing server, ``http://127.0.0.1:8000``.
        rules: The server's Pacing rules (they shape the prompt text and frame crops).
        seed: Seed of the env's reset.
        max_turns: Turns after which the episode ends without an answer.
        strict: Parse replies strictly.
        layout: VideoScout's prompt layout (its end note and the question's place).
    """

    def __init__(
        self,
        sample: VideoQA,
        base_url: str,
        *,
        rules: PacingRules | None = None,
        seed: int = 0,
        max_turns: int = 32,
        strict: bool = False,
        layout: PromptLayout = DEFAULT_LAYOUT,
    ) -> None:
        from video_env.serving.client import RemoteVideoEnv

        self.sample = sample
        self.seed = seed
        self.max_turns = max_turns
        self.policy = VideoScoutPolicy(
            EngineModelSlot(),
            rules=rules,
            strict=strict,
            **layout.policy_kwargs(),
        )
        self.env: Any = RemoteVideoEnv(base_url, "PacingEnv")
        self.turns = 0
        self.done = True
        self.reward = 0.0
        self.record: dict[str, Any] | None = None
        self._observation: dict[str, Any] = {}

    def reset(self) -> list[Any]:
        """Start the episode on the server; the first turn's chat."""
        self._observation, _ = self.env.reset(seed=self.seed, options={"sample_id": self.sample.id})
        if "frames" not in self._observation:
            raise ConfigError("the server must send frames: serve with --pixel-observations")
        self.turns, self.done, self.reward, self.record = 0, False, 0.0, None
        return self.policy.messages(self._observation)


class RemotePacingToolEnv(PacingToolEnv):
    """:class:`PacingToolEnv` whose episodes run on a Pacing server.

    Args:
        samples: The questions by id (the server must serve the same ids).
        base_url: The server.
        rules: The server's rules.
        max_turns: Env steps after which the episode ends without an answer.
        seed: Seed of every env reset.
        layout: VideoScout's prompt layout (its end note and the question's place).
    """

    def __init__(
        self,
        samples: Mapping[str, VideoQA],
        base_url: str,
        *,
        rules: PacingRules | None = None,
        max_turns: int = 32,
        seed: int = 0,
        layout: PromptLayout = DEFAULT_LAYOUT,
    ) -> None:
        super().__init__(
            samples,
            rules=rules,
            max_turns=max_turns,
            seed=seed,
            layout=layout,
        )
        self.base_url = base_url

    def reset(self, **row: Any) -> list[dict[str, Any]]:
        """Start the episode of ``row["sample_id"]`` in a new server session."""
        sample_id = str(row.get("sample_id", ""))
        if sample_id not in self.samples:
            raise ConfigError(f"unknown sample_id {sample_id!r} in the training row")
        if self.episode is not None:
            self.episode.close()
        self.episode = RemotePacingChatEnv(
            self.samples[sample_id],
            self.base_url,
            rules=self.rules,
            seed=self.seed,
            max_turns=self.max_turns,
            layout=self.layout,
        )
        self.actions = []
        self.resets += 1
        return tool_content(self.episode.reset())


def remote_pacing_env_factory(
    samples: Sequence[VideoQA],
    base_url: str,
    *,
    rules: PacingRules | None = None,
    max_turns: int = 32,
    seed: int = 0,
    layout: PromptLayout = DEFAULT_LAYOUT,
) -> Callable[[], RemotePacingToolEnv]:
    """The ``environment_factory`` of :class:`RemotePacingToolEnv` over ``samples``."""
    by_id = samples_by_id(samples)

    def factory() -> RemotePacingToolEnv:
        return RemotePacingToolEnv(
            by_id,
            base_url,
            rules=rules,
            max_turns=max_turns,
            seed=seed,
            layout=layout,
        )

    return factory
