"""Writing a Tools preset's calls and reading its results, from observations only.

A tool agent knows its preset (the system's tools, argument names and units: public
interface, never the episode's annotations) and the observation: the video's length, the
results so far. :func:`span_call` writes a call over a span in the preset's units
(seconds, ``HH:MM:SS``, frame numbers, Video-MTR's pool indices), :func:`answer_call` its
answer, and :func:`clip_lines` / :func:`content_texts` read results back.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from video_env.actions.parsing import ActionParseError, parse_time
from video_env.actions.types import ToolCall
from video_env.envs.tool_presets import PRESETS, resolve_preset
from video_env.envs.tool_rules import ToolPreset, ToolSpec
from video_env.errors import ConfigError
from video_env.types import Interval

#: A caption-index line of a search result: ``clip 5 [00:00:40-00:00:50]: caption``.
_CLIP_LINE = re.compile(r"^clip (\d+) \[([^\]]+?)-([^\]]+)\]: (.*)$")
#: FrameThinker's locate result: ``Frame number at time 01:05 is: 1950.``
_FRAME_NUMBER = re.compile(r"Frame number at time (\S+) is: (\d+)")


def preset_for(preset: str | ToolPreset | None, tool_names: Iterable[str]) -> ToolPreset:
    """The preset given, else the one whose tools are exactly ``tool_names``.

    The tool names are what the env lists as legal at reset (``info["legal_actions"]``):
    the interface an agent is shown, not the episode's annotations.

    Raises:
        ConfigError: When no preset (or more than one) has exactly these tools, or the
            preset given lacks one of them (the env plays another preset).
    """
    names = frozenset(n.lower() for n in tool_names)
    if preset is not None:
        chosen = resolve_preset(preset)
        if not names <= {s.name.lower() for s in chosen.tools}:
            raise ConfigError(
                f"this policy plays the {chosen.name} preset, but the env's tools are "
                f"{sorted(names)}: make the env with preset={chosen.name!r}"
            )
        return chosen
    found = [p for p in PRESETS.values() if frozenset(s.name.lower() for s in p.tools) == names]
    if len(found) != 1:
        raise ConfigError(
            f"no single Tools preset has the tools {sorted(names)}; name the preset "
            "(tools-uniform:PRESET, tools-random:PRESET)"
        )
    return found[0]


def turns_left(observation: dict[str, Any]) -> int:
    """The turns the episode has left (this one included)."""
    return int(observation["turns_left"][0])


def duration_of(observation: dict[str, Any]) -> float:
    """The video's length in seconds."""
    return float(observation["duration"][0])


@dataclass
class VideoUnits:
    """What writing positions needs of the video: its length and (FrameThinker) frame rate.

    Attributes:
        duration: Seconds.
        fps: Frames per second, learnt from a ``locate`` result; ``None`` until then.
    """

    duration: float
    fps: float | None = None

    def learn(self, observation: dict[str, Any]) -> None:
        """Read the frame rate from the latest locate result (``Frame number at time``)."""
        for result in reversed(observation["results"]):
            match = _FRAME_NUMBER.search(str(result["text"]))
            if match is None:
                continue
            try:
                seconds = parse_time(match.group(1))
            except ActionParseError:
                continue
            if seconds >= 1.0:
                self.fps = int(match.group(2)) / seconds
                return


def needs_fps(preset: ToolPreset) -> bool:
    """Whether the preset's positions are frame numbers (FrameThinker)."""
    return preset.position == "frame"


def pool_times(preset: ToolPreset, duration: float) -> np.ndarray:
    """Video-MTR's frame pool as the env draws it (1 fps, 4 to ``pool`` frames, even)."""
    count = int(min(max(duration, 4.0), preset.pool or 2))
    count = max(2, count - count % 2)
    return np.linspace(0.0, max(0.0, duration - 1.0 / 30), count)


def stamp(preset: ToolPreset, seconds: float) -> str:
    """A time as the preset's system writes it (``MM:SS``, ``HH:MM:SS``)."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if preset.time_format == "mm:ss":
        return f"{hours * 60 + minutes:02d}:{secs:02d}"
    return f"{hours:02d}:{minutes:02d}:{secs:02d}"


def position(preset: ToolPreset, seconds: float, units: VideoUnits, upper: bool = False) -> Any:
    """``seconds`` as a position argument of the preset (``upper``: a span's end).

    Raises:
        ConfigError: For frame positions before the frame rate is known.
    """
    if preset.position == "frame":
        if units.fps is None:
            raise ConfigError("frame positions need the frame rate: call the locate tool first")
        return int(math.floor(seconds * units.fps) if upper else math.ceil(seconds * units.fps))
    if preset.position == "pool":
        pool = pool_times(preset, units.duration)
        index = np.searchsorted(pool, seconds, side="right" if upper else "left")
        return int(min(max(index - 1 if upper else index, 0), len(pool) - 1))
    if preset.time_format == "hh:mm:ss":
        whole = min(math.ceil(seconds), math.floor(units.duration)) if upper else seconds
        return stamp(preset, whole)
    tenths = seconds * 10
    return (math.floor(tenths + 1e-6) if upper else math.ceil(tenths - 1e-6)) / 10


def frames_fps(spec: ToolSpec, length: float) -> float:
    """A frame rate for a span that stays within the tool's frame cap (VideoZoomer's 16)."""
    rule = spec.frames
    wanted = rule.fps if rule is not None and rule.fps is not None else 1.0
    most = rule.max_frames if rule is not None else 16
    return max(0.001, min(wanted, math.floor(most / max(length, 1e-6) * 1000) / 1000))


def span_call(
    preset: ToolPreset,
    spec: ToolSpec,
    span: Interval,
    units: VideoUnits,
    query: str = "",
    clip: int | None = None,
) -> ToolCall:
    """A call of ``spec`` over ``span`` (and ``query``, ``clip`` where it takes them)."""
    arguments: dict[str, Any] = {}
    for argument, field in spec.params.items():
        if argument in spec.fixed:
            continue
        if field == "start":
            arguments[argument] = position(preset, span.start, units)
        elif field == "end":
            arguments[argument] = position(preset, span.end, units, upper=True)
        elif field == "spans":
            pair = [position(preset, span.start, units), position(preset, span.end, units, True)]
            arguments[argument] = pair if spec.tool == "view" else [pair]
        elif field == "query" and query:
            arguments[argument] = query
        elif field == "fps":
            arguments[argument] = frames_fps(spec, span.length)
        elif field == "clip" and clip is not None:
            arguments[argument] = clip
        elif field == "time":
            arguments[argument] = stamp(preset, span.start)
    if preset.position == "pool":  # a span between two pool frames: the frame before it
        ends = [a for a, f in spec.params.items() if f in ("start", "end") and a in arguments]
        if len(ends) == 2 and arguments[ends[1]] < arguments[ends[0]]:
            arguments[ends[1]] = arguments[ends[0]]
    return ToolCall(spec.name, arguments)


def answer_call(
    preset: ToolPreset,
    text: str,
    spans: Sequence[Interval] = (),
    clips: Sequence[int] = (),
) -> ToolCall:
    """The preset's answer tool with ``text`` (and evidence where the tool takes it)."""
    spec = preset.answer_tool
    arguments: dict[str, Any] = {}
    for argument, field in spec.params.items():
        if field == "text":
            arguments[argument] = text
        elif field == "spans" and spans:
            arguments[argument] = [min(s.start for s in spans), max(s.end for s in spans)]
        elif field == "clips" and clips:
            arguments[argument] = list(clips)
    return ToolCall(spec.name, arguments)


@dataclass(frozen=True)
class ClipLine:
    """One clip of a caption-index result."""

    clip: int
    span: Interval
    caption: str


def clip_lines(text: str) -> list[ClipLine]:
    """The clips a caption search (or an index shown at reset) listed."""
    out = []
    for line in text.splitlines():
        match = _CLIP_LINE.match(line.strip())
        if match is None:
            continue
        try:
            start, end = parse_time(match.group(2)), parse_time(match.group(3))
        except ActionParseError:
            continue
        if end >= start:
            out.append(ClipLine(int(match.group(1)), Interval(start, end), match.group(4)))
    return out


def content_texts(observation: dict[str, Any]) -> list[tuple[str, str]]:
    """``(tool, text)`` of every result that says what the video shows.

    Frame results (``"8 frames at ..."``) carry no content for a text agent and are left
    out; answers, descriptions and captions stay (caption lines without their prefix).
    """
    out = []
    for result in observation["results"]:
        if int(result["n_frames"][0]) > 0:
            continue
        text, tool = str(result["text"]), str(result["tool"])
        lines = clip_lines(text)
        if lines:
            out += [(tool, line.caption) for line in lines]
        elif text.strip():
            out.append((tool, text.strip()))
    return out
