"""The Pacing environment: VideoScout's Sequential Evidence Acquisition."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from video_env.actions.pacing import PacingActionSet
from video_env.actions.types import Action, AnswerAction, RewatchAction, SpeedAction
from video_env.actions.validation import dict_text
from video_env.backends.base import FrameBatch, similarities
from video_env.envs.arguments import EnvArguments
from video_env.envs.base import VideoQAEnv
from video_env.envs.observation_text import pacing_images, pacing_text
from video_env.envs.pacing_rules import (
    PacingRules,
    SpeedSpec,
    pixel_vlm_rules,
    reference_chunk,
    rules_name,
)
from video_env.envs.spaces import (
    ERROR_CHARS,
    MAX_SECONDS,
    QUESTION_CHARS,
    clean_text,
    fraction_window_space,
    scalar,
    text_space,
    unit_space,
    window_array,
    window_space,
)
from video_env.errors import ConfigError, InvalidActionError
from video_env.types import Interval, VideoQA
from video_env.video.resize import Resize
from video_env.video.sampling import uniform_times

if TYPE_CHECKING:
    from typing_extensions import Unpack

SPEED_FACTORS = (1, 2, 4)
SENSORS = ("vlm", "clip")
_CLIP_SLOTS = 4  # chunks per window at most (4x)


class PacingEnv(VideoQAEnv):
    """VideoScout's Sequential Evidence Acquisition over a long video.

    ## Description
    The video is cut into chunks whose duration depends on its length (<30 s: 10 s, <2 min:
    15 s, <5 min: 20 s, <15 min: 30 s, else 45 s). Each turn shows a window of chunks from the
    forward pointer; the agent goes on at a speed, rewatches a chunk, or answers, with notes.

    ## Action Space
    ``Dict(kind: Discrete(3) [0 speed, 1 rewatch, 2 answer], speed: Discrete(3)
    [1x, 2x, 4x], chunk: Discrete(max_chunks, start=1), answer: Text, has_window:
    Discrete(2), window: Box(2) in fractions of the duration, memory: Text)``; or the
    dataclasses ``SpeedAction``, ``RewatchAction``, ``AnswerAction`` of
    :mod:`video_env.actions`; LLM text goes through
    :class:`~video_env.actions.PacingActionSet` (VideoScout's Think-Act format); an empty
    ``memory`` leaves the notes unchanged.

    ## Observation Space
    ``question``, ``options`` (``"A. ...`` lines, empty for open questions), ``memory``,
    ``timestamps`` (``float32[20]``, padded with -1) and ``n_frames`` of the current window,
    ``window`` (seconds), ``chunks`` (first and last chunk number shown), ``n_chunks``,
    ``progress`` (chunks passed / chunks), ``speed`` (index into 1x/2x/4x),
    ``rewatching``, ``turn``, ``last_action_error``; ``frames``
    (``uint8[20, R, R, 3]``, the first ``n_frames`` valid, each turn's resolution in the
    top-left corner) when ``pixel_observations``; and ``sensor`` when sensors are set:
    ``answer`` and ``confidence`` of the VLM on the window, ``relevance`` (CLIP cosine of the
    question with each chunk of the window, -1 padded).

    ## Rewards
    On answering: ``r_acc`` (1 if correct) + ``r_fmt`` (0.3 if every turn was well-formed:
    valid, written in the full Think-Act format when it came as text — see
    :class:`~video_env.actions.PacingActionSet` — and with memory within its word budget) +
    ``r_timing = 0.5 * min(M, T) / max(M, T) * r_acc`` (``M``: chunks passed when answering,
    ``T``: ``meta["reference_chunk"]`` or the chunk where the evidence ends). An invalid
    action gives ``-invalid_action_penalty``.

    ## Starting State
    Turn 1 shows chunk 1 at 1x; the pointer then stands at chunk 2; memory is empty.

    ## Episode End
    Terminated by ``answer``; truncated after more than ``max_invalid_actions`` invalid
    actions. Once the last chunk has been shown only ``answer`` is legal (no rewatch
    either). Wrap with ``TimeLimit`` for a
    turn limit.

    ## Information
    ``sample_id, turn, last_action_error, invalid_actions, legal_actions, simulated,
    step_cost, memory_truncated``; on the last step ``episode``: ``answer, correct, score,
    window, gtou, iou, reward, reward_parts (acc, fmt, timing), turns, frames,
    frames_shown, vlm_calls, caption_calls, clip_calls, visual_tokens, invalid_actions,
    ended_by, simulated, explored, trajectory, pacing_rules`` (the rules' name,
    :func:`~video_env.envs.pacing_rules.rules_name`). (Wall time is not in ``info``, which
    Gymnasium requires to be deterministic; the episode runner measures it.)

    ## Arguments
    ``dataset``, ``perception``, ``vlm``, ``captioner``, ``clip``, ``judge``,
    ``max_invalid_actions``,
    ``invalid_action_penalty``, ``standin_missing_videos``, ``render_mode`` (see
    :class:`~video_env.envs.base.VideoQAEnv`); ``rules`` (:class:`PacingRules`; default
    the paper's, or the ``pixel-vlm`` preset when the VLM is the pixel VLM: its own size),
    ``pixel_observations`` (default False), ``sensors`` (subset of ``("vlm", "clip")``,
    default ``("vlm",)``), ``max_chunks`` (bound of the chunk action, default 512).

    ## Version History
    * v1: ``option_list`` in the observation, the options as a sequence of texts without
      letters (option ``i`` is letter ``i``), and the video's ``duration``.
    * v0: initial release (``observation_version=0``).
    """

    kind = "pacing"

    def __init__(
        self,
        dataset: Sequence[VideoQA] | str | None = None,
        *,
        rules: PacingRules | None = None,
        pixel_observations: bool = False,
        sensors: Sequence[str] = ("vlm",),
        max_chunks: int = 512,
        **common: Unpack[EnvArguments],
    ) -> None:
        super().__init__(dataset, **common)
        unknown = set(sensors) - set(SENSORS)
        if unknown:
            raise ConfigError(f"unknown sensors {sorted(unknown)}; known: {list(SENSORS)}")
        self.pixel_observations = pixel_observations
        self.sensors = tuple(sensors)
        self.perception = self.perception.for_roles(*self.sensors)
        self.rules = rules or (pixel_vlm_rules() if self.perception.is_pixel_vlm else PacingRules())
        self.max_chunks = max_chunks
        self.memory_chars = self.rules.memory_words * 16
        self.action_space = self._make_action_space()
        self.observation_space = self._versioned_space(self._make_observation_space())

    # -- spaces ----------------------------------------------------------------------

    def _make_action_space(self) -> spaces.Dict:
        return spaces.Dict(
            {
                "kind": spaces.Discrete(3),
                "speed": spaces.Discrete(3),
                "chunk": spaces.Discrete(self.max_chunks, start=1),
                "answer": text_space(256),
                "has_window": spaces.Discrete(2),
                "window": fraction_window_space(),
                "memory": text_space(self.memory_chars),
            }
        )

    def _make_observation_space(self) -> spaces.Dict:
        n = self.rules.max_frames
        fields: dict[str, spaces.Space[Any]] = {
            "question": text_space(QUESTION_CHARS),
            "options": text_space(QUESTION_CHARS),
            "memory": text_space(self.memory_chars),
            "timestamps": spaces.Box(-1.0, MAX_SECONDS, (n,), np.float32),
            "n_frames": spaces.Discrete(n + 1),
            "window": window_space(),
            "chunks": spaces.Box(0, self.max_chunks, (2,), np.int64),
            "n_chunks": spaces.Box(1, self.max_chunks, (1,), np.int64),
            "progress": unit_space(),
            "speed": spaces.Discrete(3),
            "rewatching": spaces.Discrete(2),
            "turn": spaces.Box(0, np.iinfo(np.int64).max, (1,), np.int64),
            "last_action_error": text_space(ERROR_CHARS),
        }
        if self.pixel_observations:
            h, w = self.rules.max_height, self.rules.max_resolution
            fields["frames"] = spaces.Box(0, 255, (n, h, w, 3), np.uint8)
        if self.sensors:
            fields["sensor"] = spaces.Dict(
                {
                    "answer": text_space(256),
                    "confidence": unit_space(),
                    "relevance": spaces.Box(-1.0, 1.0, (_CLIP_SLOTS,), np.float32),
                }
            )
        return spaces.Dict(fields)

    # -- episode ---------------------------------------------------------------------

    def _begin(self, sample: VideoQA) -> None:
        self.chunks = self.rules.chunks(self.video.duration)
        if len(self.chunks) > self.max_chunks:
            raise ConfigError(
                f"{len(self.chunks)} chunks exceed max_chunks={self.max_chunks}; raise it"
            )
        self.memory = ""
        self.memory_truncated = False
        self.well_formed = True  # every turn so far earned r_fmt (see _answer_reward)
        self.speed = 1
        self.rewatching = False
        self.pointer = 1
        self._show(1, 1, self.rules.speeds[1], "forward")
        self.pointer = 2

    def _show(self, first: int, last: int, spec: SpeedSpec, kind: str) -> None:
        """Show chunks ``first..last`` with ``spec``'s frames and resolution."""
        self.window_chunks = (first, last)
        window = Interval(self.chunks[first - 1].start, self.chunks[last - 1].end)
        self.window = window
        self.turn_spec = spec
        self._last_times = uniform_times(window, spec.frames)
        self.batch = FrameBatch(self.video, self._last_times, spec.size)
        episode = self._require_episode_or_done()
        episode.explore(window, kind)
        episode.frames_shown += spec.frames
        self._sensor = self._read_sensors()

    def _read_sensors(self) -> dict[str, Any]:
        if not self.sensors:
            return {}
        sample = self.sample
        answer, confidence = "", 0.0
        if "vlm" in self.sensors and self.perception.vlm is not None:
            reply = self.perception.vlm.answer(self.batch, sample.question, sample.options)
            self._require_episode_or_done().reading(reply.text, reply.confidence, self.judge)
            answer, confidence = reply.text, reply.confidence
        relevance = np.full(_CLIP_SLOTS, -1.0, dtype=np.float32)
        if "clip" in self.sensors and self.perception.clip is not None:
            clip = self.perception.clip
            features = clip.image_features(self.video, self._last_times.tolist())
            query = clip.text_features([sample.question])[0]
            sims = similarities(features, query)
            first, last = self.window_chunks
            for slot, number in enumerate(range(first, last + 1)):
                chunk = self.chunks[number - 1]
                inside = (self._last_times >= chunk.start) & (self._last_times <= chunk.end)
                if inside.any():
                    relevance[slot] = float(np.clip(sims[inside].max(), -1, 1))
        return {
            "answer": clean_text(answer, 256),
            "confidence": scalar(min(max(confidence, 0.0), 1.0)),
            "relevance": relevance,
        }

    # -- actions ---------------------------------------------------------------------

    def _coerce(self, action: Any) -> Action:
        if isinstance(action, (SpeedAction, RewatchAction, AnswerAction)):
            if not action.well_formed:
                self.well_formed = False
            return action
        if not isinstance(action, dict):
            raise TypeError(
                f"Pacing actions are SpeedAction, RewatchAction, AnswerAction or an "
                f"action_space dict, got {type(action).__name__}"
            )
        memory = dict_text(action, "memory", "") or None
        kind = int(action["kind"])
        if kind == 0:
            speed = int(action["speed"])
            if not 0 <= speed < len(SPEED_FACTORS):
                raise InvalidActionError(f"speed must be 0 (1x), 1 (2x) or 2 (4x), got {speed}")
            return SpeedAction(SPEED_FACTORS[speed], memory)
        if kind == 1:
            return RewatchAction(int(action["chunk"]), memory)
        if kind != 2:
            raise InvalidActionError(
                f"kind must be 0 (speed), 1 (rewatch) or 2 (answer), got {kind}"
            )
        return self._answer_from_dict(action, memory)

    def _act(self, action: Action) -> float:
        if isinstance(action, SpeedAction):
            if self.pointer > len(self.chunks):
                raise InvalidActionError("the video has ended: only answer is legal")
            if action.factor not in self.rules.speeds:
                raise InvalidActionError(f"speed must be 1x, 2x or 4x, got {action.factor}x")
            spec = self.rules.speeds[action.factor]
            last = min(len(self.chunks), self.pointer + spec.chunks - 1)
            self.speed, self.rewatching = action.factor, False
            self._update_memory(action.memory)
            self._show(self.pointer, last, spec, "forward")
            self.pointer = last + 1
            return 0.0
        if isinstance(action, RewatchAction):
            if self.pointer > len(self.chunks):
                raise InvalidActionError("the video has ended: only answer is legal")
            first, last = self.window_chunks
            if self.rewatching or first == last:
                raise InvalidActionError(
                    "rewatch is legal only when the window spans several chunks"
                )
            if not first <= action.chunk <= last:
                raise InvalidActionError(f"rewatch chunk must be between {first} and {last}")
            self.rewatching = True
            self._update_memory(action.memory)
            self._show(action.chunk, action.chunk, self.rules.rewatch, "rewatch")
            return 0.0
        raise TypeError(f"not a Pacing action: {action!r}")

    def _update_memory(self, memory: str | None) -> None:
        """Replace the notes (``None`` keeps them), cut to the word budget."""
        if memory is None:
            return
        words = memory.split()
        self.memory_truncated = len(words) > self.rules.memory_words
        if self.memory_truncated:
            self.well_formed = False  # VideoScout: memory within its budget
        self.memory = " ".join(words[: self.rules.memory_words])

    def _answer_reward(self, action: AnswerAction) -> dict[str, float]:
        self._update_memory(action.memory)
        correct = self._correct(action.text)
        episode = self._require_episode_or_done()
        sample = self.sample
        reference = sample.meta.get("reference_chunk")
        if reference is None and sample.gt_intervals:
            reference = reference_chunk(self.chunks, max(iv.end for iv in sample.gt_intervals))
        advanced = self.pointer - 1
        return {
            "acc": 1.0 if correct else 0.0,
            "fmt": self.rules.format_reward
            if episode.invalid_actions == 0 and self.well_formed
            else 0.0,
            "timing": self.rules.timing(advanced, int(reference or 0), correct),
        }

    def _answer_window(self, action: AnswerAction) -> Interval | None:
        """The given window, else the window on screen when answering."""
        return action.window or self.window

    def _legal_kinds(self) -> list[str]:
        if self.pointer > len(self.chunks):
            return ["answer"]  # the end of the video
        kinds = ["speed", "answer"]
        first, last = self.window_chunks
        if not self.rewatching and last > first:
            kinds.insert(1, "rewatch")
        return kinds

    # -- observation -----------------------------------------------------------------

    def _kind_observation(self) -> dict[str, Any]:
        n = self.rules.max_frames
        stamps = np.full(n, -1.0, dtype=np.float32)
        stamps[: len(self._last_times)] = self._last_times
        obs: dict[str, Any] = {
            "memory": clean_text(self.memory, self.memory_chars),
            "timestamps": stamps,
            "n_frames": len(self._last_times),
            "window": window_array(self.window),
            "chunks": np.array(self.window_chunks, dtype=np.int64),
            "n_chunks": np.array([len(self.chunks)], dtype=np.int64),
            "progress": scalar((self.pointer - 1) / len(self.chunks)),
            "speed": 0 if self.rewatching else SPEED_FACTORS.index(self.speed),
            "rewatching": int(self.rewatching),
        }
        if self.pixel_observations:
            obs["frames"] = self._frames()
        if self.sensors:  # fresh arrays: callers may keep and modify observations
            obs["sensor"] = {
                k: v.copy() if isinstance(v, np.ndarray) else v for k, v in self._sensor.items()
            }
        return obs

    def _frames(self) -> np.ndarray:
        n, h, w = self.rules.max_frames, self.rules.max_height, self.rules.max_resolution
        out = np.zeros((n, h, w, 3), dtype=np.uint8)
        size = self.turn_spec.size
        pixels = self.video.frames(self._last_times, size=Resize.exact(size.width, size.height))
        out[: len(pixels), : size.height, : size.width] = pixels
        return out

    def text_action_set(self) -> PacingActionSet:
        """``speed``, ``rewatch``, ``answer``, in VideoScout's Think-Act tags."""
        return PacingActionSet()

    def observation_text(self, observation: dict[str, Any]) -> str:
        """The window shown, its frames' times, the sensors and the notes, as text."""
        return pacing_text(observation)

    def observation_images(self, observation: dict[str, Any]) -> list[np.ndarray]:
        """The window's frames (``pixel_observations``), cropped to the turn's size."""
        spec = getattr(self, "turn_spec", None)
        return pacing_images(observation, spec.size if spec is not None else None)

    def record_fields(self) -> dict[str, Any]:
        """The pacing rules' name (:func:`~video_env.envs.pacing_rules.rules_name`)."""
        return {"pacing_rules": rules_name(self.rules)}

    def _info(self) -> dict[str, Any]:
        info = super()._info()
        info["memory_truncated"] = getattr(self, "memory_truncated", False)
        return info

    def _current_window(self) -> Interval | None:
        return getattr(self, "window", None)

    def _ansi_lines(self) -> list[str]:
        first, last = self.window_chunks
        return [
            f"chunks {first}-{last} of {len(self.chunks)}, pointer {self.pointer}, "
            f"speed {self.speed}x{' (rewatch)' if self.rewatching else ''}",
            f"memory: {self.memory or '(empty)'}",
        ]
