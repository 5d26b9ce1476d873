"""FALCONEye's building blocks: the clip tree, LLM replies, and the prompts' evaluation list."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from policies.observations import Caption, Evaluation, format_captions
from policies.reasoning import window_from
from video_env.actions import AnswerAction
from video_env.errors import ConfigError
from video_env.types import Interval

_TOL = 0.05  # seconds: windows read back from float32 observations


#: How a zoomed window is cut into pieces (``children``).
SPLITS = ("released", "even")


def children(window: Interval, split: str = "released") -> list[Interval]:
    """The zoom-in of a window: 60 s pieces over 120 s, 20 s pieces over 20 s, else 5 s.

    ``split="released"`` follows the released ``generate_candidates4captioning``
    (``compute_smallwindow_span2caption``): ``int(L / span)`` pieces of exactly ``span``
    seconds from the window's start, so the remainder of a partial window is dropped (a
    50 s window gives [0, 20] and [20, 40]). ``split="even"`` cuts the whole window into
    ``max(2, round(L / span))`` equal pieces (the library's earlier rule).

    Raises:
        ConfigError: For an unknown ``split``.
    """
    if split not in SPLITS:
        raise ConfigError(f"split must be one of {SPLITS}, got {split!r}")
    length = window.length
    if length <= 5.0 + _TOL:
        return []
    if split == "even":
        size = 20.0 if length > 20.0 + _TOL else 5.0
        n = max(2, round(length / size))
        step = length / n
        return [Interval(window.start + k * step, window.start + (k + 1) * step) for k in range(n)]
    span = 60.0 if length > 120.0 + _TOL else 20.0 if length > 20.0 + _TOL else 5.0
    n = int((length + _TOL) / span)
    return [Interval(window.start + k * span, window.start + (k + 1) * span) for k in range(n)]


def window_key(window: Interval) -> tuple[int, int]:
    """A window's identity to a tenth of a second (observations are float32)."""
    return round(window.start * 10), round(window.end * 10)


def caption_of(window: Interval, captions: Sequence[Caption]) -> str:
    """The caption of the level-1 clip a window starts in (as the released code adds it)."""
    for caption in captions:
        if caption.window.start - _TOL <= window.start < caption.window.end - _TOL:
            return caption.text
    return ""


def format_evaluations(done: Sequence[Evaluation], captions: Sequence[Caption]) -> str:
    """One line per evaluated window: answer, confidence and the caption of its clip."""
    return "\n".join(
        f'[{e.window.start:.0f}-{e.window.end:.0f}s] answer: "{e.answer}" | confidence: '
        f"{e.confidence:.2f} | caption: {caption_of(e.window, captions)}"
        for e in done
    )


def _candidate(item: Any, duration: float) -> tuple[float, float] | None:
    """A window from ``{"start_s", "end_s"}``, ``[start, end]`` or ``"start-end"``."""
    if isinstance(item, dict):
        start, end = item.get("start_s"), item.get("end_s")
        if start is None or end is None:
            return window_from(item.get("window"), duration)
        return window_from([_seconds(start), _seconds(end)], duration)
    return window_from(item, duration)


def _seconds(value: Any) -> Any:
    """``"12s"`` -> ``"12"`` (the released parser strips the unit too)."""
    return value.strip().rstrip("s") if isinstance(value, str) else value


def candidate_windows(items: list[Any], duration: float) -> list[Interval]:
    """The usable, distinct windows of an LLM's candidate list, in its order."""
    out: list[Interval] = []
    for item in items:
        window = _candidate(item, duration)
        if window is None or window[1] - window[0] >= duration - _TOL:
            continue  # unusable, or the whole video (the released code skips it too)
        interval = Interval(*window)
        if window_key(interval) not in {window_key(w) for w in out}:
            out.append(interval)
    return out


@dataclass(frozen=True)
class Decision:
    """The LLM's decision step: ``answer`` (with its text and window), ``zoom``, ``reason``."""

    kind: str
    answer: str = ""
    window: Interval | None = None
    zoom: tuple[Interval, ...] = ()

    @classmethod
    def parse(
        cls, reply: dict[str, Any], duration: float, *, allow_answer: bool
    ) -> Decision | None:
        """Read a reply; ``None`` when it names no known decision.

        An answer that was not offered, or a ``Nan`` answer, means keep searching.
        """
        kind = str(reply.get("decision", "")).strip().lower()
        if kind not in ("answer", "zoom", "reason"):
            return None
        if kind == "answer":
            text = str(reply.get("final_answer") or "").strip()
            if not allow_answer or not text or text.lower() == "nan":
                return cls("reason")
            window = window_from(reply.get("window"), duration)
            return cls("answer", text, Interval(*window) if window else None)
        if kind == "zoom":
            raw = reply.get("zoom")
            zoom = candidate_windows(raw, duration) if isinstance(raw, list) else []
            return cls("zoom", zoom=tuple(zoom)) if zoom else cls("reason")
        return cls("reason")

    def answer_action(self, fallback: Evaluation) -> AnswerAction:
        """The answer, with the evaluated window it rests on when the LLM gave none."""
        return AnswerAction(self.answer or fallback.answer, self.window or fallback.window)


class Context:
    """What one step of the loop knows (observation, parsed)."""

    def __init__(
        self,
        question: str,
        options: list[str],
        captions: list[Caption],
        done: list[Evaluation],
        duration: float,
        threshold: float,
        budget: int,
    ) -> None:
        self.question, self.options, self.captions = question, options, captions
        self.done, self.duration = done, duration
        self.threshold, self.budget = threshold, budget


def video_key(captions: Sequence[Caption], duration: float) -> str:
    """A video's identity as the policy sees it: its duration and clip captions."""
    text = f"{duration:.3f}\n" + format_captions(captions)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
