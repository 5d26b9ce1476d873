"""Any env kind as TRL's multi-turn environment, its text actions as one tool.

:class:`TextToolEnv` is :class:`~policies.training.trl_env.PacingToolEnv`'s counterpart for
every registered env kind (``ENV_CLASSES``). TRL's environment hook
(``GRPOTrainer(environment_factory=...)``) makes each public method of the environment a
tool; here there is one, ``act(action)``, whose argument is one action in the env's own text
syntax (its ``text_action_set()``: ``evaluate([0, 60])``, ``answer("B", [12, 20])``...),
documented in the system prompt (:func:`text_tool_dataset_rows`). ``reset(**row)`` and each
tool result are the observation as the env renders it (``observation_text``, and
``observation_images`` as images); ``get_reward`` is the env's episode reward (an episode
that never answers is abandoned: the env's reward of that). Rules, invalid actions,
penalties and rewards are the env's, unchanged: a reply the action set cannot read is the
env's invalid action.

One text tool rather than a tool per action: TRL reads a tool's schema from its method's
signature and docstring, fixed per class, whereas an env's actions may depend on how it was
built (a preset). Pacing keeps its own tools (:class:`~policies.training.trl_env.
PacingToolEnv`: the actions as typed tools, VideoScout's prompt); this class plays Pacing too,
in its text actions.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from policies.training.trl_env import TASK, samples_by_id
from video_env._optional import require
from video_env.envs import ENV_CLASSES
from video_env.envs.base import VideoQAEnv
from video_env.errors import ConfigError
from video_env.types import VideoQA
from video_env.wrappers.text_actions import parse_text_action

__all__ = ["TOOL_SYSTEM_PROMPT", "TextToolEnv", "text_env_factory", "text_tool_dataset_rows"]

_PURPOSE = "TRL's GRPO trainer with a video-env environment"

#: The system prompt of the text tool: the env's action set's documentation and an example.
TOOL_SYSTEM_PROMPT = (
    "You answer a question about a long video you cannot watch directly; you explore it "
    "with actions, each one call of the act tool with the action as its text.\n{actions}\n"
    "Call act with exactly one action, for example: {example}"
)


class TextToolEnv:
    """One rollout's episode of an env kind, its text actions as the TRL tool ``act``.

    Args:
        env_class: The env's class (``ENV_CLASSES[kind]``).
        samples: The questions by id (the rows' ``sample_id``).
        env_kwargs: The env's further arguments.
        seed: Seed of every env reset.

    Every public method is a tool for TRL (``reset`` and ``get_reward`` excepted): only
    ``act`` is public.

    Attributes:
        env: The env (built at the first ``reset``, reused by the later ones).
        record: The current episode's record once it has ended (``None`` before).
        actions: The texts acted in the current episode, in order.
        resets: Episodes started by this instance.
        steps: Env steps taken by this instance (all episodes).
    """

    def __init__(
        self,
        env_class: type[VideoQAEnv],
        samples: Mapping[str, VideoQA],
        env_kwargs: Mapping[str, Any] | None = None,
        *,
        seed: int = 0,
    ) -> None:
        self.env_class = env_class
        self.samples = samples
        self.env_kwargs = dict(env_kwargs or {})
        self.seed = seed
        self.env: VideoQAEnv | None = None
        self.record: dict[str, Any] | None = None
        self.actions: list[str] = []
        self.resets = 0
        self.steps = 0
        self._running = False

    def reset(self, **row: Any) -> list[dict[str, Any]]:
        """Start the episode of ``row["sample_id"]``; its first observation as content parts.

        Raises:
            ConfigError: For a row naming no sample.
        """
        sample_id = str(row.get("sample_id", ""))
        if sample_id not in self.samples:
            raise ConfigError(f"unknown sample_id {sample_id!r} in the training row")
        if self.env is None:
            self.env = self.env_class(list(self.samples.values()), **self.env_kwargs)
        observation, _ = self.env.reset(seed=self.seed, options={"sample": self.samples[sample_id]})
        self.record, self.actions, self._running = None, [], True
        self.resets += 1
        return self._content(observation)

    def act(self, action: str) -> list[dict[str, Any]] | str:
        """Take one action in the video environment; what it shows next.

        Args:
            action: One action, written as the system prompt describes, e.g.
                answer("B", [12, 20]).
        """
        if self.env is None or not self._running:
            raise ConfigError("the episode is over: reply without calling a tool")
        # TRL hands an argument the model wrote as a JSON object or list over decoded:
        # it is written back as JSON, as the model wrote it (a JSON-format preset reads it)
        text = action if isinstance(action, str) else _as_text(action)
        parsed = parse_text_action(self.env.text_action_set(), text)
        observation, _, terminated, truncated, info = self.env.step(parsed)
        self.actions.append(text)
        self.steps += 1
        if terminated or truncated:
            self._running = False
            self.record = dict(info["episode"])
            return f"The episode is over ({self.record.get('ended_by', 'ended')})."
        return self._content(observation)

    def get_reward(self) -> float:
        """The episode's reward (an unanswered episode is abandoned: the env's reward of it)."""
        if self.env is None:
            return 0.0
        if self._running:
            self._running = False
            self.record = self.env.abandon("no_answer")
        return float((self.record or {}).get("reward") or 0.0)

    def _content(self, observation: dict[str, Any]) -> list[dict[str, Any]]:
        """The observation as TRL content parts: its text, then one image a frame."""
        env = self.env
        if env is None:
            return []
        parts: list[dict[str, Any]] = [{"type": "text", "text": env.observation_text(observation)}]
        frames = env.observation_images(observation)
        if frames:
            image = require("PIL.Image", "train", _PURPOSE)
            parts += [{"type": "image", "image": image.fromarray(f)} for f in frames]
        return parts


def text_tool_dataset_rows(
    kind: str, samples: Sequence[VideoQA], env_kwargs: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """One training row per question: the tool's system prompt, a task line, the question id.

    The system prompt documents the actions of an env of ``kind`` built with ``env_kwargs``
    (:data:`TOOL_SYSTEM_PROMPT`); the question, its options and what the env shows first
    come from ``reset``. No row carries an answer or an annotation.
    """
    env = _env_class(kind)(list(samples), **dict(env_kwargs or {}))
    try:
        actions = env.text_action_set()
    finally:
        env.close()
    system = TOOL_SYSTEM_PROMPT.format(actions=actions.describe(), example=actions.example())
    return [
        {
            "prompt": [{"role": "system", "content": system}, {"role": "user", "content": TASK}],
            "sample_id": sample.id,
        }
        for sample in samples
    ]


def text_env_factory(
    kind: str,
    samples: Sequence[VideoQA],
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    seed: int = 0,
) -> Callable[[], TextToolEnv]:
    """The ``environment_factory`` of :class:`TextToolEnv` for ``kind`` over ``samples``.

    Raises:
        ConfigError: For an unknown kind, or samples sharing an id.
    """
    env_class = _env_class(kind)
    by_id = samples_by_id(samples)

    def factory() -> TextToolEnv:
        return TextToolEnv(env_class, by_id, env_kwargs, seed=seed)

    return factory


def _env_class(kind: str) -> type[VideoQAEnv]:
    if kind not in ENV_CLASSES:
        raise ConfigError(f"unknown env kind {kind!r}; known: {sorted(ENV_CLASSES)}")
    return ENV_CLASSES[kind]


def _as_text(action: Any) -> str:
    """A non-text tool argument as the text the model wrote: an object or list as JSON."""
    if isinstance(action, (Mapping, list, tuple)):
        return json.dumps(action, ensure_ascii=False, default=str)
    return str(action)
