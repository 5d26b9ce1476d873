"""Reading observations: options, windows, captions — the only inputs policies get."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from video_env.types import Interval

_OPTION_LINE = re.compile(r"^([A-Z])\. (.*)$")


def parse_options(text: str) -> list[str]:
    """Option texts from an observation's ``options`` field (``"A. x"`` lines)."""
    return [match.group(2) for match in _option_lines(text)]


def option_letters(text: str) -> list[str]:
    """The option letters of an observation's ``options`` field, as its lines give them."""
    return [match.group(1) for match in _option_lines(text)]


def _option_lines(text: str) -> list[re.Match[str]]:
    matches = (_OPTION_LINE.match(line.strip()) for line in text.splitlines())
    return [match for match in matches if match]


def window_of(value: Any) -> Interval:
    """An :class:`Interval` from an observation's ``float32[2]`` window."""
    start, end = float(value[0]), float(value[1])
    return Interval(start, max(start, end))


@dataclass(frozen=True)
class Caption:
    """A caption of a window (a clip, or a single frame as a zero-length window)."""

    window: Interval
    text: str


def clip_captions(observation: dict[str, Any]) -> list[Caption]:
    """Zoom's clip captions, in time order."""
    return [Caption(window_of(c["window"]), str(c["caption"])) for c in observation["clips"]]


def frame_captions(observation: dict[str, Any]) -> list[Caption]:
    """ClipQuery's seen frames as zero-length captions, in time order."""
    out = []
    for frame in observation["frames"]:
        t = float(frame["time"][0])
        out.append(Caption(Interval(t, t), str(frame["caption"])))
    return out


@dataclass(frozen=True)
class Evaluation:
    """A VLM evaluation as the Zoom env reports it."""

    window: Interval
    answer: str
    confidence: float


def evaluations(observation: dict[str, Any]) -> list[Evaluation]:
    """Zoom's evaluation history."""
    return [
        Evaluation(window_of(e["window"]), str(e["answer"]), float(e["confidence"][0]))
        for e in observation["evaluations"]
    ]


def most_confident(done: Sequence[Evaluation]) -> Evaluation | None:
    """The most confident evaluation (the earliest on ties), or ``None``."""
    return max(done, key=lambda e: e.confidence, default=None)


def format_captions(captions: Sequence[Caption]) -> str:
    """``[start-end s] caption`` lines (``[t s]`` for frames), for prompts."""
    lines = []
    for c in captions:
        w = c.window
        stamp = f"{w.start:.1f}s" if w.length == 0 else f"{w.start:.0f}-{w.end:.0f}s"
        lines.append(f"[{stamp}] {c.text}")
    return "\n".join(lines)


#: FALCONEye's confidence thresholds to stop searching.
OPEN_THRESHOLD, MCQ_THRESHOLD = 0.8, 0.9


def threshold_for(
    options: Sequence[str],
    open_threshold: float = OPEN_THRESHOLD,
    mcq_threshold: float = MCQ_THRESHOLD,
) -> float:
    """FALCONEye's confidence threshold: 0.9 for MCQs, 0.8 for open questions."""
    return mcq_threshold if options else open_threshold
