"""Core data types: time intervals and video question-answering samples."""

from __future__ import annotations

import math
import numbers
import os
import reprlib
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeAlias

from video_env.errors import VideoEnvError

if TYPE_CHECKING:
    from video_env.video.base import VideoReader

#: Letters that label multiple-choice options, in order (so at most 26 options).
OPTION_LETTERS = string.ascii_uppercase

#: Longest video a sample may describe, and latest time it may name (seconds): a week.
#: Loaders skip (and report) a record beyond it; stand-in videos and the envs' spaces
#: are bounded by it.
MAX_DURATION_S = 7 * 24 * 3600.0


class SampleError(VideoEnvError, ValueError):
    """A :class:`VideoQA` sample or an :class:`Interval` is inconsistent."""


@dataclass(frozen=True, order=True)
class Interval:
    """A closed time interval ``[start, end]`` in seconds.

    Args:
        start: Start time in seconds, finite and non-negative.
        end: End time in seconds, finite and ``>= start``.

    Raises:
        SampleError: If the bounds are not finite, negative, or reversed.
    """

    start: float
    end: float

    def __post_init__(self) -> None:
        for name in ("start", "end"):
            value = getattr(self, name)
            # numbers.Real admits numpy scalars (observations carry float32 windows)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise SampleError(f"interval {name} must be a number, got {value!r}")
            try:
                seconds = float(value)
            except OverflowError:  # an integer too large for a float
                seconds = math.inf
            if not math.isfinite(seconds) or seconds < 0:
                raise SampleError(f"interval {name} must be finite and >= 0, got {_brief(value)}")
            object.__setattr__(self, name, seconds)
        if self.start > self.end:
            raise SampleError(f"interval start {self.start} is after its end {self.end}")

    @classmethod
    def of(cls, value: Interval | Sequence[float]) -> Interval:
        """Build an interval from an ``Interval`` or a ``(start, end)`` pair."""
        if isinstance(value, Interval):
            return value
        if isinstance(value, (str, bytes)) or len(value) != 2:
            raise SampleError(f"an interval is a (start, end) pair, got {value!r}")
        return cls(value[0], value[1])

    @property
    def length(self) -> float:
        """Length in seconds."""
        return self.end - self.start

    @property
    def center(self) -> float:
        """Midpoint in seconds."""
        return (self.start + self.end) / 2

    def contains(self, t: float) -> bool:
        """Tell whether time ``t`` lies inside the (closed) interval."""
        return self.start <= t <= self.end

    def intersection(self, other: Interval) -> Interval | None:
        """The overlap with ``other``, or ``None`` when they are disjoint."""
        start, end = max(self.start, other.start), min(self.end, other.end)
        return Interval(start, end) if start <= end else None

    def clip(self, duration: float) -> Interval:
        """The part of the interval inside ``[0, duration]``."""
        return Interval(min(self.start, duration), min(self.end, duration))

    def to_list(self) -> list[float]:
        """``[start, end]``, for JSON."""
        return [self.start, self.end]


#: A video reference: a file path, or an object implementing the reader protocol
#: (e.g. a synthetic video rendered on demand).
VideoRef: TypeAlias = "str | os.PathLike[str] | VideoReader"


@dataclass(frozen=True)
class VideoQA:
    """One video question-answering sample: a question about a video.

    Multiple-choice questions carry ``options``; their ``answer`` is the letter of the
    correct option (``"A"``, ``"B"``, ...). Open questions have ``options=None`` and a
    free-text ``answer``. ``answer=None`` means the benchmark has no public answer: such
    samples are excluded from accuracy, never counted wrong.

    Args:
        id: Unique id of the sample within its dataset.
        video: File path of the video, or an in-memory reader (see :data:`VideoRef`).
        question: The question text, without the options.
        answer: Option letter (MCQ), free text (open), or ``None`` when unknown.
        duration: Video length in seconds when known (used to validate intervals).
        options: Option texts of a multiple-choice question, or ``None``.
        gt_intervals: Ground-truth evidence windows (zero or more).
        category: Question category, e.g. ``"text"`` or ``"temporal"``.
        source: Dataset the sample comes from, e.g. ``"synth"`` or ``"cg-bench"``.
        meta: Free-form extra fields kept from the source annotation.

    Raises:
        SampleError: If fields are inconsistent (empty question, bad answer letter,
            intervals outside the video, ...).
    """

    id: str
    video: VideoRef
    question: str
    answer: str | None
    duration: float | None = None
    options: tuple[str, ...] | None = None
    gt_intervals: tuple[Interval, ...] = ()
    category: str | None = None
    source: str = "custom"
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise SampleError(f"sample id must be a non-empty string, got {_brief(self.id)}")
        if not isinstance(self.question, str) or not self.question.strip():
            raise SampleError(f"sample {self.id}: question is empty")
        for name in ("answer", "category", "source"):
            value = getattr(self, name)
            if not isinstance(value, str) and (value is not None or name == "source"):
                raise SampleError(f"sample {self.id}: {name} must be text, got {_brief(value)}")
        if self.options is None and self.answer is not None and not self.answer.strip():
            raise SampleError(f"sample {self.id}: an open question's answer is empty")
        self._check_duration()
        self._check_options()
        self._check_encodable()
        intervals = tuple(Interval.of(iv) for iv in self.gt_intervals)
        object.__setattr__(self, "gt_intervals", intervals)
        if self.duration is not None:
            limit, video = self.duration, f"the video (duration {self.duration} s)"
        else:
            limit, video = MAX_DURATION_S, f"the longest video allowed ({MAX_DURATION_S:g} s)"
        for iv in intervals:
            if iv.end > limit + 1e-6:
                raise SampleError(
                    f"sample {self.id}: interval [{iv.start}, {iv.end}] lies outside {video}"
                )

    def _check_duration(self) -> None:
        if self.duration is None:
            return
        duration = self.duration
        if isinstance(duration, bool) or not isinstance(duration, numbers.Real):
            raise SampleError(
                f"sample {self.id}: duration must be a number, got {_brief(duration)}"
            )
        if not 0 < duration <= MAX_DURATION_S:  # compared exactly: an int may not fit a float
            raise SampleError(
                f"sample {self.id}: duration must be > 0 and at most {MAX_DURATION_S:g} s "
                f"(MAX_DURATION_S), got {_brief(duration)}"
            )
        object.__setattr__(self, "duration", float(duration))

    def _check_options(self) -> None:
        if self.options is None:
            return
        options = tuple(self.options)
        if len(options) < 2 or len(options) > len(OPTION_LETTERS):
            raise SampleError(f"sample {self.id}: an MCQ needs 2-26 options, got {len(options)}")
        if not all(isinstance(o, str) and o.strip() for o in options):
            raise SampleError(f"sample {self.id}: options must be non-empty strings")
        object.__setattr__(self, "options", options)
        if self.answer is not None and self.answer not in OPTION_LETTERS[: len(options)]:
            raise SampleError(
                f"sample {self.id}: MCQ answer must be an option letter "
                f"A-{OPTION_LETTERS[len(options) - 1]}, got {self.answer!r}"
            )

    def _check_encodable(self) -> None:
        """Refuse text UTF-8 cannot write: a lone surrogate (a JSON escape in D800-DFFF)."""
        texts = {"id": self.id, "question": self.question, "answer": self.answer,
                 "category": self.category, "source": self.source}  # fmt: skip
        texts.update({f"option {i + 1}": o for i, o in enumerate(self.options or ())})
        for name, text in texts.items():
            try:
                (text or "").encode("utf-8")
            except UnicodeEncodeError:
                raise SampleError(
                    f"sample {_brief(self.id)}: {name} holds a lone surrogate, which is no "
                    f"text: {_brief(text)}"
                ) from None

    @property
    def is_mcq(self) -> bool:
        """Whether the question is multiple-choice."""
        return self.options is not None

    @property
    def has_answer(self) -> bool:
        """Whether the ground-truth answer is known."""
        return self.answer is not None

    @property
    def option_letters(self) -> tuple[str, ...]:
        """Letters of the options (empty for open questions)."""
        return tuple(OPTION_LETTERS[: len(self.options or ())])

    @property
    def answer_index(self) -> int | None:
        """Index of the correct option (MCQ with a known answer), else ``None``."""
        if self.options is None or self.answer is None:
            return None
        return OPTION_LETTERS.index(self.answer)

    @property
    def answer_text(self) -> str | None:
        """The answer as text: the correct option's text for an MCQ."""
        index = self.answer_index
        if index is not None and self.options is not None:
            return self.options[index]
        return self.answer

    @property
    def video_path(self) -> str | None:
        """The video's file path, or ``None`` for an in-memory video."""
        if isinstance(self.video, (str, os.PathLike)):
            return os.fspath(self.video)
        return None

    def replace(self, **changes: Any) -> VideoQA:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the video must be a path)."""
        path = self.video_path
        if path is None:
            raise SampleError(f"sample {self.id}: an in-memory video cannot be serialised")
        return {
            "id": self.id,
            "video": path,
            "question": self.question,
            "answer": self.answer,
            "duration": self.duration,
            "options": list(self.options) if self.options is not None else None,
            "gt_intervals": [iv.to_list() for iv in self.gt_intervals],
            "category": self.category,
            "source": self.source,
            "meta": dict(self.meta),
        }

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> VideoQA:
        """Inverse of :meth:`to_dict`."""
        options = record.get("options")
        ident, meta = record["id"], record.get("meta") or {}
        if isinstance(ident, bool) or not isinstance(ident, (str, int)):
            raise SampleError(f"sample id must be text or an integer, got {_brief(ident)}")
        if not isinstance(meta, Mapping):
            raise SampleError(f"sample {ident}: meta must be an object, got {_brief(meta)}")
        splits = meta.get("splits")
        if isinstance(splits, str):  # one split's name, not its characters
            meta = {**meta, "splits": [splits]}
        elif splits is not None and not (
            isinstance(splits, (list, tuple)) and all(isinstance(x, str) for x in splits)
        ):
            raise SampleError(
                f"sample {ident}: meta.splits must be a list of names, got {_brief(splits)}"
            )
        return cls(
            id=str(ident),
            video=record["video"],
            question=record["question"],
            answer=record.get("answer"),
            duration=record.get("duration"),
            options=tuple(options) if options is not None else None,
            gt_intervals=tuple(Interval.of(iv) for iv in record.get("gt_intervals") or ()),
            category=record.get("category"),
            source=record.get("source", "custom"),
            meta=dict(meta),
        )


def option_lines(options: Sequence[str]) -> str:
    """Options as ``A. text`` lines, one line each (a newline would forge another option)."""
    return "\n".join(
        f"{OPTION_LETTERS[i]}. {' '.join(text.split())}" for i, text in enumerate(options)
    )


def _brief(value: object) -> str:
    """A short ``repr`` for messages (a huge number or a deep record stays short)."""
    return reprlib.repr(value)


def merge_intervals(intervals: Iterable[Interval]) -> list[Interval]:
    """Merge overlapping or touching intervals into a sorted, disjoint list."""
    merged: list[Interval] = []
    for iv in sorted(intervals):
        if merged and iv.start <= merged[-1].end:
            last = merged.pop()
            merged.append(Interval(last.start, max(last.end, iv.end)))
        else:
            merged.append(iv)
    return merged
