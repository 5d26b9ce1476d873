"""The ``vf.MultiTurnEnv`` over a video-env environment (imports verifiers)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import gymnasium as gym
import verifiers as vf
from verifiers.utils.message_utils import normalize_messages

from policies.verifiers_envs.render import EnvChat
from video_env.actions.validation import MAX_WIRE_TEXT_CHARS
from video_env.envs import ENV_CLASSES
from video_env.envs.text_hooks import TextAgentHooks
from video_env.types import VideoQA
from video_env.wrappers.text_actions import default_action_set, parse_text_action

__all__ = ["MAX_REPLY_CHARS", "VideoMultiTurnEnv"]

#: The longest reply read: a ``video-env serve`` wire action carries at most this much
#: text, and an in-process env reads the same prefix, so both modes parse alike (a longer
#: reply is cut there; its action, if past the cut, is not read: the env's invalid action).
MAX_REPLY_CHARS = MAX_WIRE_TEXT_CHARS

#: Arguments that choose perception backends: a remote episode's local renderer (an env of
#: the kind, never reset) leaves them out, so that it loads no model.
_PERCEPTION_ARGS = ("perception", "vlm", "captioner", "clip", "judge")
#: verifiers' stop condition → the ``ended_by`` of an unanswered episode's record.
_ENDED_BY = {"max_turns_reached": "max_turns", "has_error": "error", "timeout_reached": "timeout"}


class VideoMultiTurnEnv(vf.MultiTurnEnv):
    """One video-env episode per rollout (see :mod:`policies.verifiers_envs`).

    Args:
        paradigm: An env kind (``"pacing"``, ``"zoom"``, ``"clip_query"``...).
        env_id: The environment id.
        env_class: Its class name (for remote wire actions).
        samples: The rollout inputs' questions, by ``info["sample_index"]``.
        chat: How the episodes are shown to the model; its ``env_kwargs`` are each
            episode's environment's arguments.
        base_url: A ``video-env serve`` server instead of in-process environments (its
            observations are rendered by a local env of the kind, built once, never reset,
            without perception backends).
        seed: Seed of every env reset.
        **kwargs: ``vf.MultiTurnEnv`` arguments (``dataset``, ``max_turns``...).
    """

    def __init__(
        self,
        *,
        paradigm: str,
        env_id: str,
        env_class: str,
        samples: Sequence[VideoQA],
        chat: EnvChat,
        base_url: str | None,
        seed: int,
        **kwargs: Any,
    ) -> None:
        super().__init__(rubric=_rubric(), **kwargs)
        self.paradigm = paradigm
        self.video_env_id = env_id
        self.env_class = env_class
        self.samples = list(samples)
        self.chat = chat
        self.env_kwargs = chat.env_kwargs
        self.base_url = base_url
        self.seed = seed
        self._renderer: TextAgentHooks | None = None

    def _make_env(self) -> Any:
        if self.base_url is not None:
            from video_env.serving.client import RemoteVideoEnv

            return RemoteVideoEnv(self.base_url, self.env_class)
        kwargs = {**self.env_kwargs, "dataset": self.samples}
        return gym.make(self.video_env_id, disable_env_checker=True, **kwargs).unwrapped

    def _hooks(self, env: Any) -> TextAgentHooks:
        """What renders ``env``'s observations: ``env``, or for a remote one a local env.

        The local env is of the same kind and settings, built once and never reset.
        """
        if isinstance(env, TextAgentHooks):
            return env
        if self._renderer is None:
            kwargs = {k: v for k, v in self.env_kwargs.items() if k not in _PERCEPTION_ARGS}
            self._renderer = ENV_CLASSES[self.paradigm](self.samples, **kwargs)
        return self._renderer

    async def setup_state(self, state: Any) -> Any:
        """Start the episode; the first prompt is the env's first observation.

        Raises:
            vf.InfraError: If the ``video-env serve`` session is lost (the rollout's error).
            vf.errors.Error: If the row names no sample of the env (the rollout's error).
        """
        index = _sample_index(state.get("info"), len(self.samples))
        options = {"sample_id": self.samples[index].id} if self.base_url else {"index": index}
        state["video_env_record"] = None
        state["video_env_done"] = True  # no episode to abandon until the reset has started it
        env = state["video_env"] = self._make_env()
        with _rollout_error():
            observation, _ = env.reset(seed=self.seed, options=options)
        state["video_env_done"] = False
        state["prompt"] = _messages(self.chat.first_messages(self._hooks(env), observation))
        return state

    async def get_prompt_messages(self, state: Any) -> Any:
        """A fresh chat each turn where the chat says so (VideoScout's), else the growing one."""
        if not state["trajectory"] or not self.chat.fresh_each_turn:
            return await super().get_prompt_messages(state)
        step = state["trajectory"][-1]
        reply = await self.env_response([*step["prompt"], *step["completion"]], state)
        if state.get("final_env_response") is not None:
            return [*step["prompt"], *step["completion"]]
        return reply

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
        """Step the env with the model's last reply; the next observation's messages.

        Raises:
            vf.InfraError: If the ``video-env serve`` session is lost or the env's step
                fails (the rollout's error).
        """
        text = _reply_text(messages)
        env = state["video_env"]
        with _rollout_error():  # an env that fails fails this rollout, not the evaluation
            if hasattr(env, "client"):  # remote: the server's env parses the text
                observation, _, terminated, truncated, info = env.step(text)
            else:
                action = parse_text_action(default_action_set(env), text)
                observation, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            state["video_env_done"] = True
            state["video_env_record"] = info["episode"]
            ended = info["episode"]["ended_by"]
            final = _messages([{"role": "user", "content": f"The episode is over ({ended})."}])
            state["final_env_response"] = final
            return final
        return _messages(self.chat.next_messages(self._hooks(env), observation))

    @vf.cleanup
    async def finish_episode(self, state: Any) -> None:
        """Close the env; an unanswered episode ends as the env's ``abandon`` (reward 0).

        Its record's ``ended_by`` says why: ``max_turns``, ``error`` (the model's server or
        a lost env session), ``timeout`` or ``prompt_too_long``. A lost remote session has
        no record to give (``None``: reward 0).
        """
        env = state.get("video_env")
        if env is None:
            return
        try:
            if not state.get("video_env_done"):
                stop = state.get("stop_condition")
                reason = _ENDED_BY.get(stop, stop or "error")
                state["video_env_done"] = True
                try:
                    state["video_env_record"] = env.abandon(reason)
                except Exception:  # a lost remote session, a failed env: no record to return
                    state["video_env_record"] = None
        finally:
            env.close()
            state["video_env"] = None


@contextlib.contextmanager
def _rollout_error() -> Iterator[None]:
    """A lost ``video-env serve`` session, or an env's failure, as the rollout's error.

    verifiers records it as that rollout's error and goes on; any other exception would
    end the whole evaluation.
    """
    try:
        yield
    except ConnectionError as exc:  # RemoteSessionError: the server closed, died, is unreachable
        raise vf.InfraError(f"the video-env server session is lost: {exc}") from exc
    except Exception as exc:  # the server's error reply, a bug in an env or its preset
        raise vf.InfraError(f"the video-env env failed: {type(exc).__name__}: {exc}") from exc


def _messages(messages: list[dict[str, Any]]) -> Any:
    return normalize_messages(messages, field_name="video_env")


def _reply_text(messages: Any) -> str:
    """The model's last reply as the env reads it (both modes alike).

    Its first :data:`MAX_REPLY_CHARS` characters, lone surrogates (not text: no wire or
    file can carry them) as U+FFFD.
    """
    text = _last_assistant_text(messages)[:MAX_REPLY_CHARS]
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _last_assistant_text(messages: Any) -> str:
    for message in reversed(list(messages)):
        role = message["role"] if isinstance(message, dict) else getattr(message, "role", "")
        if role != "assistant":
            continue
        content = message["content"] if isinstance(message, dict) else message.content
        if isinstance(content, str):
            return content
        return "".join(
            str(p.get("text", "") if isinstance(p, dict) else getattr(p, "text", ""))
            for p in content or []
        )
    return ""


def _record(state: Any) -> dict[str, Any]:
    record: dict[str, Any] = state.get("video_env_record") or {}
    return record


async def episode_reward(state: Any) -> float:
    """The env's reward of the episode (0 for an unanswered one)."""
    return float(_record(state).get("reward") or 0.0)


async def correct(state: Any) -> float:
    """1 if the env graded the answer correct."""
    return float(bool(_record(state).get("correct")))


async def invalid_actions(state: Any) -> float:
    """Invalid actions in the episode."""
    return float(_record(state).get("invalid_actions") or 0)


def _rubric() -> Any:
    rubric = vf.Rubric(funcs=[episode_reward], weights=[1.0])
    rubric.add_metric(correct)
    rubric.add_metric(invalid_actions)
    return rubric


def _sample_index(info: Any, n_samples: int) -> int:
    """The row's ``info["sample_index"]``: an integer naming one of the env's samples.

    Raises:
        vf.errors.Error: For a row without one, or one that is not such an integer (a float,
            a negative index or one past the end never falls back on another sample).
    """
    index = info.get("sample_index") if isinstance(info, dict) else None
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n_samples:
        raise vf.errors.Error(
            f"the dataset row's info.sample_index must be an integer from 0 to "
            f"{n_samples - 1}, got {str(index)[:40]!r} (rows come from build_environment)"
        )
    return index
