"""A Tools call's arguments read by its preset: the system's names and units to seconds.

:func:`read_call` turns a :class:`~video_env.actions.ToolCall` into :class:`CallArgs`
(spans in seconds, query, counts, clip ids) or raises an invalid action in the system's
words (:meth:`~video_env.envs.tool_rules.ToolPreset.message`). Where the preset clamps
(``on_invalid="clamp"``, TimeSearch-R's rule), spans are moved into the video instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from video_env.actions.parsing import ActionParseError, parse_time
from video_env.actions.reply_text import is_blank
from video_env.actions.types import ToolCall
from video_env.envs.tool_rules import ToolPreset, ToolSpec
from video_env.errors import InvalidActionError
from video_env.types import Interval

#: Slack past the video's end that counts as its end (float32 durations read back).
END_SLACK_S = 0.01
#: Most spans one call may name.
MAX_SPANS = 16


@dataclass
class CallArgs:
    """A call's arguments in the env's units (seconds, 1-based clip ids)."""

    spans: list[Interval] = field(default_factory=list)
    query: str = ""
    n: int | None = None
    fps: float | None = None
    k: int | None = None
    clip: int | None = None
    clips: list[int] = field(default_factory=list)
    time: float | None = None
    text: str = ""


@dataclass(frozen=True)
class VideoFacts:
    """What reading a call needs of the video: its length, frame rate and frame pool."""

    duration: float
    fps: float
    pool: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    n_clips: int = 0


def read_call(preset: ToolPreset, call: ToolCall, video: VideoFacts) -> tuple[ToolSpec, CallArgs]:
    """The call's tool and its arguments in seconds.

    Raises:
        InvalidActionError: An unknown tool, a missing or unknown argument, a value of the
            wrong kind, or a span outside the video (unless the preset clamps).
    """
    spec = preset.spec(call.name)
    if spec is None:
        tools = ", ".join(s.name for s in preset.tools)
        raise InvalidActionError(preset.message("unknown_tool", name=call.name, tools=tools))
    for argument in spec.required or ():
        value = call.arguments.get(argument)
        if value is None or (isinstance(value, str) and is_blank(value)):
            raise InvalidActionError(
                preset.message("missing_argument", name=spec.name, argument=argument)
            )
    args = CallArgs()
    bounds: dict[str, float] = {}
    raw_spans: list[tuple[float, float]] = []
    for argument, value in call.arguments.items():
        target = spec.field_of(argument)
        if target is None:
            raise InvalidActionError(
                preset.message("unknown_argument", name=spec.name, argument=argument)
            )
        if argument in spec.fixed or value is None:
            continue
        try:
            _fill(args, bounds, raw_spans, target, value, preset, video)
        except (ValueError, TypeError, OverflowError, ActionParseError) as exc:
            if preset.on_invalid == "clamp":  # TimeSearch-R: a bad value falls to its default
                continue
            raise InvalidActionError(
                preset.message("bad_argument", name=spec.name, argument=argument, detail=exc,
                               start="?", end="?", most=len(video.pool) - 1)
            ) from None  # fmt: skip
    if bounds:
        start = bounds.get("start", 0.0)
        end = bounds.get("end", math.inf if preset.on_invalid == "clamp" else video.duration)
        raw_spans.insert(0, (start, end))
    args.spans = [_checked_span(preset, start, end, video) for start, end in raw_spans]
    return spec, args


def _fill(
    args: CallArgs,
    bounds: dict[str, float],
    raw_spans: list[tuple[float, float]],
    target: str,
    value: Any,
    preset: ToolPreset,
    video: VideoFacts,
) -> None:
    if target in ("start", "end"):
        bounds[target] = _position(value, preset, video)
    elif target == "time":
        args.time = _seconds(value)
    elif target == "spans":
        raw_spans.extend(_span(pair, preset, video) for pair in _pairs(value))
    elif target in ("query", "text"):
        setattr(args, target, value if isinstance(value, str) else str(value))
    elif target in ("n", "k"):
        setattr(args, target, _integer(value))
    elif target == "fps":
        fps = float(value)
        if not (math.isfinite(fps) and fps > 0):
            raise ValueError(f"fps must be > 0, got {value!r}")
        args.fps = fps
    elif target == "clip":
        args.clip = _integer(value)
    elif target == "clips":
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        if len(items) > MAX_SPANS:
            raise ValueError(f"at most {MAX_SPANS} clips a call, got {len(items)}")
        args.clips = [_integer(v) for v in items]


def _integer(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("a number is needed, got a boolean")
    if isinstance(value, str):
        value = value.strip().removeprefix("clip").strip(" _#")
    number = float(value)
    if not math.isfinite(number) or number != int(number) or abs(number) > 10**9:
        raise ValueError(f"an integer is needed, got {value!r}")
    return int(number)


def _seconds(value: Any) -> float:
    """Seconds from a number or a time text (``75``, ``"01:15"``, ``"1:01:15"``, ``"75s"``)."""
    if isinstance(value, bool):
        raise ValueError("a time is needed, got a boolean")
    seconds = float(value) if isinstance(value, (int, float)) else parse_time(str(value))
    if not math.isfinite(seconds):
        raise ValueError(f"a finite time is needed, got {value!r}")
    return seconds


def _position(value: Any, preset: ToolPreset, video: VideoFacts) -> float:
    """A position argument in seconds: seconds, a frame index, or a pool index."""
    if preset.position == "frame":
        return _integer(value) / video.fps
    if preset.position == "pool":
        index = _integer(value)
        if not 0 <= index < len(video.pool):
            raise ValueError(f"pool index {index} is outside 0..{len(video.pool) - 1}")
        return float(video.pool[index])
    return _seconds(value)


def _pairs(value: Any) -> Sequence[Sequence[Any]]:
    """``[s, e]`` or ``[[s, e], ...]`` as a list of pairs."""
    if isinstance(value, str):
        parts = value.replace(" to ", "-").split("-")
        return [parts] if len(parts) == 2 else [[value, value]]
    if not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f"a [start, end] pair is needed, got {value!r}")
    if all(not isinstance(v, (list, tuple)) for v in value):
        if len(value) != 2:
            raise ValueError(f"a [start, end] pair is needed, got {value!r}")
        return [value]
    pairs = [v for v in value if isinstance(v, (list, tuple)) and len(v) == 2]
    if len(pairs) != len(value):
        raise ValueError("each range is a [start, end] pair")
    if len(pairs) > MAX_SPANS:
        raise ValueError(f"at most {MAX_SPANS} ranges a call, got {len(pairs)}")
    return pairs


def _span(pair: Sequence[Any], preset: ToolPreset, video: VideoFacts) -> tuple[float, float]:
    """A ``[start, end]`` pair as written (perhaps reversed or outside), in seconds."""
    start, end = (_position(v, preset, video) for v in pair)
    return start, end


def _checked_span(preset: ToolPreset, start: float, end: float, video: VideoFacts) -> Interval:
    """A span inside the video, or the system's error (or clamped, when it clamps)."""
    duration = video.duration
    if preset.on_invalid == "clamp":
        start = min(max(start, 0.0), duration)
        end = min(max(end, start), duration)
        if end - start <= 0:  # an empty window: the frame at its time
            start, end = max(0.0, start - 0.5), min(duration, start + 0.5)
        return Interval(start, end)
    fields = {"start": _shown(start), "end": _shown(end), "duration": duration}
    if preset.position == "pool":  # its messages speak in pool indices: the times' places
        index_of = np.searchsorted(video.pool, [start, end])
        fields.update(start=int(index_of[0]), end=int(index_of[1]), most=len(video.pool) - 1)
        if not start <= end:
            raise InvalidActionError(preset.message("bad_argument", name="", argument="",
                                                    detail="", **fields))  # fmt: skip
    if start < 0:
        raise InvalidActionError(preset.message("negative_start", **fields))
    if end <= start and preset.position != "pool":
        raise InvalidActionError(preset.message("reversed", **fields))
    if start >= duration:
        raise InvalidActionError(preset.message("start_past_video", **fields))
    if end > duration + END_SLACK_S:
        raise InvalidActionError(preset.message("end_past_video", **fields))
    return Interval(start, min(end, duration))


def _shown(seconds: float) -> float | int:
    return int(seconds) if float(seconds).is_integer() else round(seconds, 3)


def evidence_spans(preset: ToolPreset, args: CallArgs, clips: Sequence[Interval]) -> list[Interval]:
    """An answer's evidence: its spans, then its clip ids' clips (1-based, of the index).

    Raises:
        InvalidActionError: For a clip id the index does not have.
    """
    evidence = list(args.spans)
    for clip in args.clips:
        if not 1 <= clip <= len(clips):
            raise InvalidActionError(preset.message("bad_clip", argument=clip, most=len(clips)))
        evidence.append(clips[clip - 1])
    return evidence


def hull(spans: Sequence[Interval]) -> Interval | None:
    """The smallest span holding all ``spans`` (``None`` for none)."""
    if not spans:
        return None
    return Interval(min(s.start for s in spans), max(s.end for s in spans))
