"""The Tools environment: the tool calls of today's video agents over one video stack."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from video_env.actions.tools import ToolsActionSet
from video_env.actions.types import Action, AnswerAction, InvalidAction, ToolCall
from video_env.envs.arguments import EnvArguments
from video_env.envs.base import VideoQAEnv
from video_env.envs.observation_text import tools_images, tools_text
from video_env.envs.spaces import (
    ERROR_CHARS,
    MAX_SECONDS,
    QUESTION_CHARS,
    clean_text,
    text_space,
)
from video_env.envs.tool_calls import CallArgs, evidence_spans, hull, read_call
from video_env.envs.tool_index import RESULT_CHARS
from video_env.envs.tool_presets import DEFAULT_PRESET, resolve_preset
from video_env.envs.tool_rules import ToolPreset
from video_env.envs.tool_runner import (
    ToolContext,
    ToolResult,
    ToolRunner,
    union_iou,
)
from video_env.errors import ConfigError, InvalidActionError
from video_env.types import Interval, VideoQA
from video_env.video.resize import Resize

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from video_env.actions.base import ActionSet

#: Longest JSON text of a structured action's arguments.
ARGUMENT_CHARS = 4096


class ToolsEnv(VideoQAEnv):
    """The tools of the 2025–26 tool-calling video agents, one preset per system.

    ## Description
    A preset (:mod:`video_env.envs.tool_presets`: ``longvt``, ``videozoomer``,
    ``timesearch-r``, ``framethinker``, ``video-mtr``, ``videoseek``, ``dvd``,
    ``longvidsearch``, and the seed envs as tools: ``falconeye``, ``videoagent``,
    ``videoscout``) names its system's tools and their rules as the released code has
    them. Each tool runs one of the env's generic tools over the configured video reader
    and perception: ``view`` (frames of spans, to the policy), ``search`` (CLIP-ranked
    frames, top-k or TimeSearch-R's DPP, or captions of a caption index), ``read`` (a
    clip's caption), ``ask`` (a sub-model's answer over frames the policy never sees),
    ``overview`` (a description of the whole video), ``locate`` (a frame number) and
    ``answer`` (with evidence spans or clip ids). Every result stamps its frames or
    captions with their times.

    ## Action Space
    ``Dict(tool: Discrete(len(preset.tools)), arguments: Text(4096))`` (the tool's index
    in the preset and its arguments as JSON text); or a
    :class:`~video_env.actions.ToolCall` (the system's tool name and arguments) or an
    :class:`~video_env.actions.AnswerAction`. LLM text in the system's own reply format
    goes through :class:`~video_env.actions.ToolsActionSet` (``env.text_action_set()``).

    ## Observation Space
    ``question``, ``options``, ``option_list``, ``duration``, ``results`` (a tuple of
    ``{"tool", "call", "text", "times": float32[R] (-1 padded), "n_frames": int64[1]}``,
    oldest first; only the last under ``history="replace"``), ``turns_left``, ``turn``,
    ``last_action_error``; with ``pixel_observations`` also ``frames`` (the latest
    frame-carrying result's frames, ``uint8[R, H, W, 3]``, each at the top-left) and
    ``frame_sizes`` (``int64[R, 2]``: width, height; 0 for none). ``R`` is the most frames
    one result of the preset carries and ``H x W`` the preset's frame bound.

    ## Rewards
    On answering: ``acc`` + ``gtou_weight`` x GToU of the evidence's hull (without
    evidence: the spans of the surest sub-model reading, as Zoom infers its window) +
    ``tool_iou_weight`` x the temporal IoU of the last span a call chose (LongVT's tool
    reward, weight 0 by default). An invalid call gives ``-invalid_action_penalty``.

    ## Episode End
    Terminated by the answer tool; truncated after ``max_turns`` turns without one
    (``ended_by="turn_budget"``), or after more than ``max_invalid_actions`` invalid calls;
    under ``on_invalid="end"`` (FrameThinker's rule) the first invalid call terminates it.

    ## Information
    As every env, and in ``episode``: ``tools_preset``, ``tool_calls`` (by tool name),
    ``frames_shown`` (frames delivered to the policy), ``visual_tokens_shown`` (their
    Qwen2.5-VL tokens), ``sub_model_frames`` (frames the sub-models saw, = ``frames``),
    ``index`` (the caption index's cost, counted once per video and apart from the
    episode's), ``tool_iou``, ``evidence`` and ``explored`` (spans looked at, in order,
    tagged with the tool's name).

    ## Arguments
    The common ones (:class:`~video_env.envs.base.VideoQAEnv`); ``preset`` (a name or a
    :class:`~video_env.envs.tool_rules.ToolPreset`), ``overrides`` (preset fields replaced
    one by one, ``{"max_turns": 8}``), ``pixel_observations`` (False), ``gtou_weight``
    (0.5), ``tool_iou_weight`` (0.0), ``caption_max_tokens`` (64).
    """

    kind = "tools"

    def __init__(
        self,
        dataset: Sequence[VideoQA] | str | None = None,
        *,
        preset: str | ToolPreset = DEFAULT_PRESET,
        overrides: Mapping[str, Any] | None = None,
        pixel_observations: bool = False,
        gtou_weight: float = 0.5,
        tool_iou_weight: float = 0.0,
        caption_max_tokens: int = 64,
        **common: Unpack[EnvArguments],
    ) -> None:
        self.preset = resolve_preset(preset).with_overrides(**dict(overrides or {}))
        if self.preset.on_invalid == "end":
            common["max_invalid_actions"] = 0
        super().__init__(dataset, **common)
        if not (gtou_weight >= 0 and tool_iou_weight >= 0 and caption_max_tokens >= 1):
            raise ConfigError("gtou_weight, tool_iou_weight >= 0 and caption_max_tokens >= 1")
        # a preset that calls no backend keeps the VLM: its label (simulated, real) is the run's
        self.perception = self.perception.for_roles(*(self.preset.roles or ("vlm",)))
        self.pixel_observations = pixel_observations
        self.gtou_weight = gtou_weight
        self.tool_iou_weight = tool_iou_weight
        self.runner = ToolRunner(self.preset, caption_max_tokens)
        self.action_space = spaces.Dict(
            {
                "tool": spaces.Discrete(len(self.preset.tools)),
                "arguments": text_space(ARGUMENT_CHARS),
            }
        )
        self.observation_space = self._versioned_space(self._make_observation_space())

    def text_action_set(self) -> ActionSet[Any]:
        """The parser of the preset's reply format."""
        return ToolsActionSet(self.preset)

    def observation_text(self, observation: dict[str, Any]) -> str:
        """The question, the turns left and every tool result so far, as text."""
        return tools_text(observation)

    def observation_images(self, observation: dict[str, Any]) -> list[np.ndarray]:
        """The latest result's frames, cropped (with ``pixel_observations``)."""
        return tools_images(observation)

    # -- spaces ----------------------------------------------------------------------

    @property
    def result_frames(self) -> int:
        """The most frames one result carries (``R``)."""
        return max(self.preset.max_result_frames, 1)

    def _make_observation_space(self) -> spaces.Dict:
        r = self.result_frames
        result = spaces.Dict(
            {
                "tool": text_space(64),
                "call": text_space(512),
                "text": text_space(RESULT_CHARS),
                "times": spaces.Box(-1.0, MAX_SECONDS, (r,), np.float32),
                "n_frames": spaces.Box(0, r, (1,), np.int64),
            }
        )
        fields: dict[str, spaces.Space[Any]] = {
            "question": text_space(QUESTION_CHARS),
            "options": text_space(QUESTION_CHARS),
            "results": spaces.Sequence(result, stack=False),
            "turns_left": spaces.Box(0, self.preset.max_turns, (1,), np.int64),
            "turn": spaces.Box(0, np.iinfo(np.int64).max, (1,), np.int64),
            "last_action_error": text_space(ERROR_CHARS),
        }
        if self.pixel_observations:
            width, height = self.preset.frame_bound
            fields["frames"] = spaces.Box(0, 255, (r, height, width, 3), np.uint8)
            fields["frame_sizes"] = spaces.Box(0, max(width, height), (r, 2), np.int64)
        return spaces.Dict(fields)

    # -- episode ---------------------------------------------------------------------

    def _begin(self, sample: VideoQA) -> None:
        episode = self._require_episode_or_done()
        self.results: list[ToolResult] = []
        self.results_seen: list[ToolResult] = []  # every result, whatever the history shows
        self.calls: Counter[str] = Counter()
        self.evidence: list[Interval] = []
        self.tokens_shown = 0
        self.facts = self.runner.facts(self.video)
        self._pool_times = tuple(round(float(t), 6) for t in self.facts.pool)  # info's, once
        self.index = self.runner.index(self.video, self.perception)
        episode.restart_usage()  # the index is counted once per video, apart
        for result in self.runner.start(self.video, self.perception, self.index):
            self._deliver(result)

    def _deliver(self, result: ToolResult) -> None:
        episode = self._require_episode_or_done()
        for span in result.spans:
            episode.explore(span, result.tool)
        if result.batch is not None:
            episode.frames_shown += len(result.batch)
            self.tokens_shown += result.tokens
            self._last_times = np.asarray(result.batch.times, dtype=np.float64).copy()
        self.results_seen.append(result)
        self.results = [result] if self.preset.history == "replace" else [*self.results, result]

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """As :meth:`VideoQAEnv.step`; the episode is truncated once its turns are spent.

        Under ``on_invalid="end"`` an invalid call terminates the episode (FrameThinker's env
        returns ``done``: the state is terminal, not cut short); under ``unparsed_ends`` so
        does a reply with no readable call (TimeSearch-R's, VideoZoomer's).
        """
        obs, reward, terminated, truncated, info = super().step(action)
        episode = self._require_episode_or_done()
        if truncated and self.preset.on_invalid == "end":  # FrameThinker: a terminal state
            terminated, truncated = True, False
        unparsed = isinstance(action, InvalidAction) and self.preset.unparsed_ends
        if unparsed and not (terminated or truncated):  # TimeSearch-R's env: done
            obs, info = self._end(episode, "unparsed_reply", reward, info)
            terminated = True
        if not (terminated or truncated) and episode.turns >= self.preset.max_turns:
            obs, info = self._end(episode, "turn_budget", reward, info)
            truncated = True
        return obs, reward, terminated, truncated, info

    def _end(
        self, episode: Any, ended_by: str, reward: float, info: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """End the episode unanswered: the observation, and ``info`` with its record.

        The ending step's ``reward`` (an invalid call's penalty, by the step's ``info``)
        stays the record's: what an adapter that scores from the record gives the policy.
        """
        kind = "invalid" if info.get("last_action_error") else "step"
        record = self._finish(episode, None, None, {kind: reward} if reward else {}, ended_by)
        return self._observation(), {**self._info(), "episode": record}  # nothing legal now

    # -- actions ---------------------------------------------------------------------

    def _coerce(self, action: Any) -> Action:
        if isinstance(action, AnswerAction):
            self.evidence = [action.window] if action.window is not None else []
            return action
        if isinstance(action, Mapping) and not isinstance(action, ToolCall):
            action = self._call_from_dict(action)
        if not isinstance(action, ToolCall):
            raise TypeError(
                f"Tools actions are ToolCall, AnswerAction or an action_space dict, "
                f"got {type(action).__name__}"
            )
        spec, args = read_call(self.preset, action, self.facts)
        if spec.tool != "answer":
            return action
        return self._answer(args)

    def _call_from_dict(self, action: Mapping[str, Any]) -> ToolCall:
        index = int(action["tool"])
        if not 0 <= index < len(self.preset.tools):
            raise InvalidActionError(f"tool must be 0 to {len(self.preset.tools) - 1}, got {index}")
        text = action.get("arguments", "") or "{}"
        if not isinstance(text, str):
            raise InvalidActionError("the arguments are a JSON text")
        try:
            arguments = json.loads(text)
        except (ValueError, RecursionError):
            raise InvalidActionError("the arguments are not valid JSON") from None
        if not isinstance(arguments, dict):
            raise InvalidActionError("the arguments must be a JSON object")
        return ToolCall(self.preset.tools[index].name, arguments)

    def _answer(self, args: CallArgs) -> AnswerAction:
        """The answer call as an answer, its evidence (spans, clip ids) kept for the record."""
        self.evidence = evidence_spans(self.preset, args, self.index.clips if self.index else [])
        if not args.text.strip():
            raise InvalidActionError("the answer is empty")
        return AnswerAction(args.text.strip(), hull(self.evidence))

    def _act(self, action: Action) -> float:
        if not isinstance(action, ToolCall):
            raise TypeError(f"not a Tools action: {action!r}")
        episode = self._require_episode_or_done()
        if not self.preset.last_turn_tools and episode.turns + 1 >= self.preset.max_turns:
            raise InvalidActionError(self.preset.message("last_turn"))
        spec, args = read_call(self.preset, action, self.facts)
        context = ToolContext(self.video, self.facts, self.perception, self.sample, self.index)
        result = self.runner.run(spec, args, context)
        self.calls[spec.name] += 1
        self._deliver(result)
        return 0.0

    def _answer_reward(self, action: AnswerAction) -> dict[str, float]:
        parts = self._search_reward(action, self.gtou_weight, 0.0)
        parts.pop("cost", None)
        if self.tool_iou_weight:
            parts["tool_iou"] = self.tool_iou_weight * (self._tool_iou() or 0.0)
        return parts

    def _tool_iou(self) -> float | None:
        """LongVT's tool reward: the IoU of the last span chosen (whole-video looks skipped)."""
        gt = self.sample.gt_intervals
        duration = self.video.duration
        chosen = [
            w
            for w, kind in self._require_episode_or_done().explored
            if kind != "preview" and w.length < duration - 1e-6
        ]
        return union_iou(chosen[-1:], list(gt)) if gt else None

    def _answer_window(self, action: AnswerAction) -> Interval | None:
        """The evidence given, else the surest sub-model reading's spans (as Zoom), or none."""
        if action.window is not None:
            return action.window
        readings = [r for r in self.results_seen if r.confidence is not None and r.spans]
        best = max(readings, key=lambda r: r.confidence or 0.0, default=None)
        return hull(best.spans) if best is not None else None

    def _legal_kinds(self) -> list[str]:
        episode = self._require_episode_or_done()
        if not self.preset.last_turn_tools and episode.turns + 1 >= self.preset.max_turns:
            return [self.preset.answer_tool.name]
        return [s.name for s in self.preset.tools]

    # -- records ---------------------------------------------------------------------

    def _finish(
        self,
        episode: Any,
        answer: str | None,
        window: Interval | None,
        reward_parts: dict[str, float],
        ended_by: str,
    ) -> dict[str, Any]:
        record = super()._finish(episode, answer, window, reward_parts, ended_by)
        record.update(
            tool_calls=dict(self.calls),
            visual_tokens_shown=self.tokens_shown,
            sub_model_frames=record["frames"],
            index=self.index.cost_record() if self.index is not None else None,
            tool_iou=self._tool_iou(),
            evidence=[s.to_list() for s in self.evidence] if answer is not None else [],
        )
        return record

    def record_fields(self) -> dict[str, Any]:
        """The preset's name: results of different presets never pass as one."""
        return {"tools_preset": self.preset.name}

    def _info(self) -> dict[str, Any]:
        """As every env's, with ``video_fps`` and ``frame_pool`` (what frames are numbered by)."""
        info = super()._info()
        info["video_fps"] = float(self.facts.fps)
        info["frame_pool"] = list(self._pool_times)
        return info

    # -- observation -----------------------------------------------------------------

    def _kind_observation(self) -> dict[str, Any]:
        r = self.result_frames
        obs: dict[str, Any] = {
            "results": tuple(result.observed(r) for result in self.results),
            "turns_left": np.array(
                [max(0, self.preset.max_turns - self._require_episode_or_done().turns)],
                dtype=np.int64,
            ),
        }
        if self.pixel_observations:
            obs["frames"], obs["frame_sizes"] = self._frames()
        return obs

    def _frames(self) -> tuple[np.ndarray, np.ndarray]:
        width, height = self.preset.frame_bound
        r = self.result_frames
        frames = np.zeros((r, height, width, 3), dtype=np.uint8)
        sizes = np.zeros((r, 2), dtype=np.int64)
        batch = next((res.batch for res in reversed(self.results) if res.batch is not None), None)
        if batch is None:
            return frames, sizes
        size = batch.size
        if size.width <= width and size.height <= height:
            pixels = batch.pixels()  # decoded once per result, not once per observation
        else:  # an aspect past 16:9: fitted into the bound
            size = Resize.fit(width, height).target(size)
            pixels = self.video.frames(batch.times, size=Resize.exact(size.width, size.height))
        n = min(len(pixels), r)
        frames[:n, : size.height, : size.width] = pixels[:n]
        sizes[:n] = (size.width, size.height)
        return frames, sizes

    def _current_window(self) -> Interval | None:
        explored = self._require_episode_or_done().explored
        return explored[-1][0] if explored else None

    def _ansi_lines(self) -> list[str]:
        lines = [f"preset {self.preset.name}: {dict(self.calls) or 'no calls yet'}"]
        if self.results:
            last = self.results[-1]
            lines.append(f"{last.tool}: {clean_text(last.text, 160)}")
        return lines
