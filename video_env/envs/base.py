"""The base class of the video QA environments: episodes, invalid actions, answers, render."""

from __future__ import annotations

import abc
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from video_env.actions.types import (
    Action,
    AnswerAction,
    InvalidAction,
    check_action,
    describe_action,
    rejected_summary,
)
from video_env.actions.validation import MAX_DESCRIPTION_CHARS, dict_text
from video_env.backends.base import CLIP, VLM, Captioner
from video_env.backends.registry import make_judge
from video_env.envs.arguments import (
    OBSERVATION_VERSION,
    checked_index,
    resolve_dataset,
)
from video_env.envs.episode import EpisodeTracker
from video_env.envs.perception import Perception, resolve_perception, same_file_reader
from video_env.envs.render import render_ansi, render_rgb
from video_env.envs.spaces import fraction_to_window, observation, versioned_space
from video_env.envs.text_hooks import TextAgentHooks
from video_env.errors import ConfigError, InvalidActionError
from video_env.metrics.judges import Judge
from video_env.metrics.localization import gtou
from video_env.provenance import VideoProvenanceWarning, info_flags
from video_env.synth.world import SynthVideo
from video_env.types import Interval, VideoQA
from video_env.video.base import VideoReader


class VideoQAEnv(TextAgentHooks, gym.Env[dict[str, Any], Any], abc.ABC):
    """Shared machinery of the video QA environments.

    Draws a sample per episode, perceives it through the configured backends (a real
    file's frames are always the file's), handles invalid actions and answers, and builds
    ``info["episode"]``.

    Subclasses implement :meth:`_begin` (set-up), :meth:`_act` (a non-answer action),
    :meth:`_kind_observation`, :meth:`_legal_kinds`, :meth:`_answer_reward` and :meth:`_coerce`,
    and the text agent's hooks (:class:`~video_env.envs.text_hooks.TextAgentHooks`).

    Args:
        dataset: Samples, a suite name, or ``None`` for ``synth-quick``.
        perception: Backends (a :class:`Perception` or ``"simulated"``); default: the
            simulated offline set.
        vlm: A VLM backend or spec (``qwen2.5-vl:PATH``, ``openai:MODEL``; the registry's).
        captioner: A captioner or spec (default with a real ``vlm`` spec: the same model).
        clip: A CLIP or spec (``"open_clip:NAME[:PRETRAINED]"``, a folder).
        judge: Judge of open answers or a spec: ``exact`` (default), ``embedding``, an LLM's.
        max_invalid_actions: Invalid actions allowed; one more ends the episode (truncated).
        invalid_action_penalty: Reward of an invalid action (subtracted).
        standin_missing_videos: Play a missing video file as a simulated stand-in, frames
            included (labelled ``stand-in``); without it a missing file is an error.
        render_mode: ``"rgb_array"``, ``"ansi"`` or ``None``.
    """

    #: The env kind each env class declares (``"pacing"``), as benchmarks and policies name it.
    kind: ClassVar[str]
    metadata: dict[str, Any] = {"render_modes": ["rgb_array", "ansi"], "render_fps": 1}  # noqa: RUF012

    def __init__(
        self,
        dataset: Sequence[VideoQA] | str | None = None,
        *,
        perception: Perception | str | None = None,
        vlm: VLM | str | None = None,
        captioner: Captioner | str | None = None,
        clip: CLIP | str | None = None,
        judge: Judge | str | None = None,
        max_invalid_actions: int = 3,
        invalid_action_penalty: float = 0.1,
        standin_missing_videos: bool = False,
        render_mode: str | None = None,
        observation_version: int = OBSERVATION_VERSION,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode must be one of {self.metadata['render_modes']}")
        if observation_version not in (0, 1):
            raise ConfigError(f"observation_version must be 0 or 1, got {observation_version}")
        self.observation_version = observation_version
        if max_invalid_actions < 0:
            raise ConfigError("max_invalid_actions must be >= 0")
        self.samples = resolve_dataset(dataset)
        self.perception = resolve_perception(perception, vlm=vlm, captioner=captioner, clip=clip)
        self.judge: Judge | None = make_judge(judge) if isinstance(judge, str) else judge
        self.max_invalid_actions = max_invalid_actions
        self.invalid_action_penalty = invalid_action_penalty
        self.standin_missing_videos = standin_missing_videos
        self.render_mode = render_mode
        self._episode: EpisodeTracker | None = None
        self._video: VideoReader | None = None
        self._last_error = ""
        self._last_times: np.ndarray = np.zeros(0)
        self._video_warned = False

    # -- Gymnasium API ---------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode on ``options["sample"]``, ``options["index"]`` or a random sample."""
        super().reset(seed=seed)
        options = options or {}
        sample = options.get("sample")
        if sample is None:
            index = options.get("index")
            if index is None:
                index = int(self.np_random.integers(len(self.samples)))
            sample = self.samples[checked_index(index, len(self.samples))]
        if not isinstance(sample, VideoQA):
            raise TypeError(f"options['sample'] must be a VideoQA, got {type(sample).__name__}")
        episode_seed = int(self.np_random.integers(2**31 - 1))
        for backend in self.perception.backends:
            if hasattr(backend, "episode_seed"):  # simulated sensors draw anew per episode
                backend.episode_seed = episode_seed
        if (reuse := same_file_reader(self._video, sample)) is None:  # last episode's file
            self._close_video()
        self._video = None
        self._video = self.perception.video_for(sample, self.standin_missing_videos, reuse)
        self._episode = EpisodeTracker.start(sample, self.perception, self._video)
        if (note := self._episode.video_note) and not self._video_warned:  # once per env
            warnings.warn(f"{type(self).__name__}: {note}", VideoProvenanceWarning, stacklevel=2)
            self._video_warned = True
        self._last_error = ""
        self._last_times = np.zeros(0)
        self._begin(sample)
        reset_cost = self._episode.step_cost()  # in the episode's totals, not in step 1's
        info = self._info()
        info["reset_cost"] = reset_cost.to_dict()
        info["episode_seed"] = episode_seed
        return self._observation(), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Apply an action: a dataclass from :mod:`video_env.actions` or a space dict.

        An :class:`~video_env.actions.InvalidAction` (unparsable text) is an invalid action.
        """
        episode = self._require_episode()
        self._last_error = ""
        terminated = truncated = False
        parts: dict[str, float] = {}
        answer: AnswerAction | None = None
        parsed: Action | None = None
        summary = ""
        try:
            check_action(action)  # sizes and field types, before anything is described
            parsed = action if isinstance(action, InvalidAction) else self._coerce_any(action)
            if parsed is not action:
                check_action(parsed)  # the action a dict was coerced into
            summary = describe_action(parsed)
            if isinstance(parsed, InvalidAction):
                raise InvalidActionError(parsed.reason or "invalid action (no reason given)")
            if isinstance(parsed, AnswerAction):
                answer = self._check_answer(parsed)
                parts = self._answer_reward(answer)
                terminated = True
            else:
                reward = self._act(parsed)
                parts = {"step": reward} if reward else {}
        except InvalidActionError as exc:
            self._last_error = _bounded(str(exc))
            episode.invalid_actions += 1
            parts = {"invalid": -self.invalid_action_penalty}
            truncated = episode.invalid_actions > self.max_invalid_actions
        if not summary:  # refused before it could be described
            refused = parsed if parsed is not None else action
            summary = (
                "(malformed action)" if isinstance(refused, Mapping) else rejected_summary(refused)
            )
        reward = float(sum(parts.values()))
        episode.record(summary, reward, self._last_error, episode.step_cost())
        record = None
        if terminated or truncated:
            record = self._finish(
                episode,
                answer.text if answer is not None else None,
                self._answer_window(answer) if answer is not None else None,
                dict(parts),
                "answer" if terminated else "invalid_actions",
            )
        info = self._info()  # after finish(): no action is legal any more
        if record is not None:
            info["episode"] = record
        return self._observation(), reward, terminated, truncated, info

    def _coerce_any(self, action: Any) -> Action:
        """:meth:`_coerce`, with a malformed ``action_space`` dict made an invalid action.

        A dict comes from outside (a learned policy, a fuzzer, a JSON file): a missing key,
        a non-numeric string, NaN, infinity, a wrong shape, a value of the wrong type or a
        list nested thousands deep is the agent's mistake, not a crash. An object that is
        neither an action nor a dict raises ``TypeError`` (a caller bug).
        """
        if not isinstance(action, Mapping):
            return self._coerce(action)
        try:
            return self._coerce(action)
        except KeyError as exc:
            raise InvalidActionError(_bounded(f"malformed action: missing key {exc}")) from None
        except (ValueError, OverflowError, IndexError, TypeError, RecursionError) as exc:
            raise InvalidActionError(_bounded(f"malformed action: {exc}")) from None

    def render(self) -> Any:
        """An RGB picture (frames + timeline) or a text summary, per ``render_mode``."""
        if self.render_mode is None or self._episode is None:
            return None
        if self.render_mode == "ansi":
            return render_ansi(self._episode, self._current_window(), self._ansi_lines())
        return render_rgb(self._episode, self._video, self._last_times, self._current_window())

    def abandon(self, reason: str) -> dict[str, Any]:
        """End the current episode without an answer (a policy raised or never answered).

        Raises:
            RuntimeError: If no episode was started.
        """
        episode = self._require_episode_or_done()
        if episode.done:
            raise RuntimeError("the episode has already ended")
        return self._finish(episode, None, None, {}, reason)

    def _finish(
        self,
        episode: EpisodeTracker,
        answer: str | None,
        window: Interval | None,
        reward_parts: dict[str, float],
        ended_by: str,
    ) -> dict[str, Any]:
        """The episode's record (:meth:`EpisodeTracker.finish`) with :meth:`record_fields`."""
        return {**episode.finish(answer, window, reward_parts, self.judge, ended_by),
                **self.record_fields()}  # fmt: skip

    def record_fields(self) -> dict[str, Any]:
        """Settings of this env that every episode record carries (none by default).

        An env whose settings change what a policy sees (the Pacing env's frames) names
        them here, so that results made under different settings never pass as one. The
        episode runner adds them to the record of an episode that could not even start.
        """
        return {}

    def close(self) -> None:
        """Release the current video."""
        self._close_video()

    # -- shared helpers --------------------------------------------------------------

    @property
    def sample(self) -> VideoQA:
        """The current episode's sample (for wrappers and logging; not for policies)."""
        return self._require_episode_or_done().sample

    @property
    def video(self) -> VideoReader:
        """The video being perceived in the current episode."""
        if self._video is None:
            raise RuntimeError("call reset() first")
        return self._video

    def _require_episode(self) -> EpisodeTracker:
        if self._episode is None:
            raise RuntimeError("call reset() before step()")
        if self._episode.done:
            raise RuntimeError("the episode has ended; call reset()")
        return self._episode

    def _check_answer(self, action: AnswerAction) -> AnswerAction:
        if not isinstance(action.text, str):
            raise TypeError(f"the answer text must be a str, got {type(action.text).__name__}")
        if not action.text.strip():
            raise InvalidActionError("the answer is empty")
        if action.window is not None and action.window.end > self.video.duration + 1e-6:
            raise InvalidActionError(
                f"window [{action.window.start:g}, {action.window.end:g}] lies outside the "
                f"video (0 to {self.video.duration:g} s)"
            )
        return action

    def _answer_from_dict(
        self, action: Mapping[str, Any], memory: str | None = None
    ) -> AnswerAction:
        """An answer from an ``action_space`` dict (its window in fractions of the duration)."""
        window = None
        if int(action.get("has_window", 0)):
            window = fraction_to_window(action["window"], self.video.duration)
        return AnswerAction(dict_text(action, "answer"), window, memory)

    def _search_reward(
        self, action: AnswerAction, gtou_weight: float, cost: float
    ) -> dict[str, float]:
        """Zoom's and ClipQuery's terminal reward: ``acc + gtou_weight * GToU - cost``."""
        return {
            "acc": 1.0 if self._correct(action.text) else 0.0,
            "gtou": gtou_weight * self._gtou(self._answer_window(action)),
            "cost": -cost,
        }

    def _answer_window(self, action: AnswerAction) -> Interval | None:
        """The predicted evidence window (subclasses may infer one)."""
        return action.window

    def _gtou(self, window: Interval | None) -> float:
        gt = self.sample.gt_intervals
        return gtou(gt, window) if gt else 0.0

    def _correct(self, text: str) -> bool:
        grade = self._require_episode_or_done().grade(text, self.judge)
        return bool(grade and grade.correct)

    def _info(self) -> dict[str, Any]:
        episode = self._require_episode_or_done()
        return {
            "sample_id": episode.sample.id,
            "turn": episode.turns,
            "last_action_error": self._last_error,
            "invalid_actions": episode.invalid_actions,
            "legal_actions": [] if episode.done else self._legal_kinds(),
            **info_flags(episode.labels),
            "step_cost": episode.steps[-1].cost if episode.steps else {},
        }

    def _require_episode_or_done(self) -> EpisodeTracker:
        if self._episode is None:
            raise RuntimeError("call reset() first")
        return self._episode

    def _close_video(self) -> None:
        """Close a decoded file (synthetic videos are shared between samples: kept)."""
        if self._video is not None and not isinstance(self._video, SynthVideo):
            self._video.close()
        self._video = None

    # -- subclass hooks --------------------------------------------------------------

    @abc.abstractmethod
    def _begin(self, sample: VideoQA) -> None:
        """Set up a new episode on ``sample`` (``self.video`` is ready)."""

    @abc.abstractmethod
    def _act(self, action: Action) -> float:
        """Apply a non-answer action; return its reward. Raise InvalidActionError."""

    def _versioned_space(self, space: spaces.Dict) -> spaces.Dict:
        """``space`` with the fields of :attr:`observation_version` the env does not have."""
        return versioned_space(space, self.observation_version)

    def _observation(self) -> dict[str, Any]:
        """The current observation: the shared fields around :meth:`_kind_observation`'s."""
        return observation(
            self.sample, self._kind_observation(), turn=self._require_episode_or_done().turns + 1,
            error=self._last_error, version=self.observation_version, duration=self.video.duration,
        )  # fmt: skip

    @abc.abstractmethod
    def _kind_observation(self) -> dict[str, Any]:
        """The kind's own observation fields (:func:`~video_env.envs.spaces.observation`)."""

    @abc.abstractmethod
    def _legal_kinds(self) -> list[str]:
        """Names of the action kinds legal now (only asked while the episode runs)."""

    @abc.abstractmethod
    def _answer_reward(self, action: AnswerAction) -> dict[str, float]:
        """Reward parts of a (valid) answer."""

    @abc.abstractmethod
    def _coerce(self, action: Any) -> Action:
        """An action dataclass from a dataclass or an ``action_space`` dict.

        Raises:
            TypeError: For values of the wrong Python type (a programming error).
            InvalidActionError: For well-typed but malformed values (a reversed window).
        """

    @abc.abstractmethod
    def _current_window(self) -> Interval | None:
        """The window last looked at (for rendering)."""

    def _ansi_lines(self) -> list[str]:
        """Extra lines of the ``ansi`` rendering."""
        return []


def _bounded(message: str) -> str:
    """An error message cut to :data:`MAX_DESCRIPTION_CHARS` (it may quote the action)."""
    if len(message) <= MAX_DESCRIPTION_CHARS:
        return message
    return message[: MAX_DESCRIPTION_CHARS - 3] + "..."
