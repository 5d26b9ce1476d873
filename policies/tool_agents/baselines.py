"""Each Tools preset's floor: uniform calls at its budget, and random valid calls.

Both baselines play any preset. A baseline knows its preset by name
(``tools-uniform:longvt``, which also makes the bench build that preset) or, named plainly,
from the tool names the env lists as legal at reset (``info["legal_actions"]``, the
interface a prompted agent is shown), so ``--tools-preset X`` picks it. Neither sees
frames: it answers from the result texts with the offline vote
(:mod:`policies.tool_agents.evidence`), which for presets that only return frames
(LongVT, VideoZoomer, TimeSearch-R, FrameThinker, Video-MTR, VideoScout) falls to the
offline reasoner over texts naming no content: a floor, near chance.

- ``tools-uniform``: the preset's looking tool (``view``, else ``ask``, else a search
  over a span, else ``read``, else a search) on equal spans of the video (``read``:
  evenly spaced clips), one per turn for every turn but the answer's, with the question
  as the query where the tool takes one; FrameThinker first asks the frame number at the
  video's end (its positions are frame numbers).
- ``tools-random``: a number of calls drawn from 1 to the budget, each a random tool of
  the preset with random valid arguments (seeded per sample and episode), then the answer.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from policies.base import Policy
from policies.observations import parse_options
from policies.reasoning import OfflineReasoner
from policies.simple import episode_rng
from policies.tool_agents.calls import (
    VideoUnits,
    answer_call,
    content_texts,
    duration_of,
    needs_fps,
    pool_times,
    preset_for,
    span_call,
    turns_left,
)
from policies.tool_agents.evidence import offline_answer
from video_env.actions.types import ToolCall
from video_env.actions.validation import as_int
from video_env.envs.tool_presets import PRESETS
from video_env.envs.tool_rules import ToolPreset, ToolSpec
from video_env.errors import ConfigError
from video_env.types import Interval

#: The order in which a uniform baseline picks its looking tool (``span-search``: a search
#: over a span it is given).
_LOOKING = ("view", "ask", "span-search", "read", "search")


def _kind(spec: ToolSpec) -> str:
    spans = {"start", "end", "spans"} & set(spec.params.values())
    return "span-search" if spec.tool == "search" and spans else spec.tool


def looking_tool(preset: ToolPreset) -> ToolSpec:
    """The tool a uniform baseline calls (see the module docstring)."""
    for kind in _LOOKING:
        for spec in preset.tools:
            if _kind(spec) == kind:
                return spec
    raise ConfigError(f"preset {preset.name!r} has no tool that looks at the video")


def _clips(preset: ToolPreset, duration: float) -> int:
    return math.ceil(duration / preset.index_clip_s) if preset.index_clip_s else 0


class _ToolsBaseline(Policy):
    """What the two baselines share: the preset, the video's units, the answer."""

    env_kinds = ("tools",)
    base_name = "tools-baseline"

    def __init__(self, preset: str | None = None) -> None:
        super().__init__()
        if preset is not None and preset not in PRESETS:
            raise ConfigError(f"unknown tools preset {preset!r}; known: {sorted(PRESETS)}")
        self.preset_name = preset
        self.name = f"{self.base_name}:{preset}" if preset else self.base_name
        if preset is not None:
            self.env_kwargs = {"tools": {"preset": preset}}
        self.reasoner = OfflineReasoner()
        self.preset: ToolPreset = PRESETS[preset or "longvt"]
        self.units = VideoUnits(0.0)

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Know the preset and the video's length."""
        self.preset = preset_for(self.preset_name, info.get("legal_actions", ()))
        self.units = VideoUnits(duration_of(observation))

    def _answer(self, observation: dict[str, Any]) -> ToolCall:
        options = parse_options(observation["options"])
        texts = content_texts(observation)
        answer, _ = offline_answer(str(observation["question"]), options, texts, {}, self.reasoner)
        return answer_call(self.preset, answer)

    def _locate_end(self) -> ToolCall:
        """FrameThinker's frame number at the video's last whole second (gives the rate)."""
        spec = next(s for s in self.preset.tools if s.tool == "locate")
        t = max(1.0, math.floor(self.units.duration) - 1.0)
        return span_call(self.preset, spec, Interval(t, t), self.units)

    def _valid_span(self, span: Interval, spec: ToolSpec) -> Interval | None:
        """``span`` made callable: FrameThinker's must hold more frames than it returns."""
        if not needs_fps(self.preset):
            return span
        if self.units.fps is None:
            return None
        rule = spec.frame_rule(self.units.duration)
        n = rule.max_frames if rule is not None else 8
        end = min(span.end, self.units.duration - 1.0)
        start = min(span.start, end - (n + 3) / self.units.fps)
        return Interval(start, end) if start >= 0 else None


class ToolsUniformPolicy(_ToolsBaseline):
    """Uniform calls at the preset's budget, then the answer (see the module docstring).

    Args:
        preset: The preset (``None``: the env's, from its tool names).
        calls: Calls before answering (``None``: every turn but the answer's).
    """

    base_name = "tools-uniform"

    def __init__(self, preset: str | None = None, calls: int | None = None) -> None:
        super().__init__(preset)
        if calls is not None:
            calls = _count_setting(calls, "calls")
        self.calls = calls
        self._plan: list[ToolCall | Interval | int] = []

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Plan the calls."""
        super().reset(observation, info)
        budget = self.preset.max_turns - 1
        spec = looking_tool(self.preset)
        plan: list[ToolCall | Interval | int] = []
        if needs_fps(self.preset):
            plan.append(self._locate_end())
            budget -= 1
        n = max(0, min(budget, self.calls if self.calls is not None else budget))
        if spec.tool == "read":
            clips = _clips(self.preset, self.units.duration)
            ids = np.unique(np.linspace(1, clips, min(n, clips)).round().astype(int))
            plan += [int(i) for i in ids] if n else []
        elif n:
            step = self.units.duration / n
            plan += [Interval(i * step, (i + 1) * step) for i in range(n)]
        self._spec, self._plan = spec, plan

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """The next planned call, or the answer."""
        self.units.learn(observation)
        while self._plan and turns_left(observation) > 1:
            item = self._plan.pop(0)
            if isinstance(item, ToolCall):
                return item
            question = str(observation["question"])
            if isinstance(item, int):
                whole = Interval(0.0, self.units.duration)
                return span_call(self.preset, self._spec, whole, self.units, question, clip=item)
            span = self._valid_span(item, self._spec)
            if span is not None:
                return span_call(self.preset, self._spec, span, self.units, question)
        return self._answer(observation)


class ToolsRandomPolicy(_ToolsBaseline):
    """Random valid calls, then the answer (see the module docstring).

    Args:
        preset: The preset (``None``: the env's, from its tool names).
        seed: Seed of the draws (mixed with the sample and the episode's seed).
    """

    base_name = "tools-random"

    def __init__(self, preset: str | None = None, seed: int = 0) -> None:
        super().__init__(preset)
        seed = _count_setting(seed, "seed")
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self._left = 0

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Draw the number of calls."""
        super().reset(observation, info)
        self.rng = episode_rng(self.seed, info)
        self._left = int(self.rng.integers(1, max(1, self.preset.max_turns - 1) + 1))

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """A random call while calls are left, then the answer."""
        self.units.learn(observation)
        if self._left <= 0 or turns_left(observation) <= 1:
            return self._answer(observation)
        self._left -= 1
        tools = [s for s in self.preset.tools if s.tool != "answer"]
        spec = tools[int(self.rng.integers(len(tools)))]
        if needs_fps(self.preset) and self.units.fps is None:
            return self._locate_end()
        return self._random_call(spec, str(observation["question"]))

    def _random_call(self, spec: ToolSpec, question: str) -> ToolCall:
        duration = self.units.duration
        if spec.tool == "read":
            clip = int(self.rng.integers(1, max(1, _clips(self.preset, duration)) + 1))
            return span_call(self.preset, spec, Interval(0.0, duration), self.units, clip=clip)
        if spec.tool == "locate":
            t = float(self.rng.uniform(0.0, duration))
            return span_call(self.preset, spec, Interval(t, t), self.units)
        shortest = min(duration, 2.0)
        if self.preset.position == "pool":
            shortest = min(duration, 2 * float(np.diff(pool_times(self.preset, duration)[:2])[0]))
        length = float(self.rng.uniform(shortest, duration))
        start = float(self.rng.uniform(0.0, duration - length))
        span = Interval(start, start + length)
        valid = self._valid_span(span, spec) or Interval(0.0, duration)
        return span_call(self.preset, spec, valid, self.units, question)


def make_tools_uniform(arg: str, **settings: Any) -> ToolsUniformPolicy:
    """``tools-uniform:PRESET`` from the registry."""
    return ToolsUniformPolicy(arg, **settings)


def make_tools_random(arg: str, **settings: Any) -> ToolsRandomPolicy:
    """``tools-random:PRESET`` from the registry."""
    return ToolsRandomPolicy(arg, **settings)


def _count_setting(value: Any, what: str) -> int:
    """A setting that counts (an ``int`` >= 0, :func:`as_int`'s), else a ``ConfigError``."""
    try:
        count = as_int(value, what)
    except TypeError as exc:
        raise ConfigError(str(exc)) from None
    if count < 0:
        raise ConfigError(f"{what} must be >= 0, got {count}")
    return count
