"""What every loader shares: per-record parsing, tolerance of bad records, safe video paths.

Every loader parses its annotation files into :class:`~video_env.types.VideoQA` samples
through a :class:`RecordContext`, one per file. It names the file and record index in
errors and runs each record through :meth:`RecordContext.collect` / :meth:`~RecordContext.
attempt`, the one place where a malformed record is either fatal (``strict=True``) or
skipped and reported as a :class:`RecordIssue` (the default). Harmless defects (an empty
option, two options with the same text) keep the record and are reported too
(:meth:`RecordContext.flag`). Video paths taken from annotations go through
:meth:`RecordContext.video` (a :class:`~video_env.data._video_paths.VideoRoot`), which
refuses any that leave the video root; MCQ answers through
:func:`~video_env.data._answers.answer_letter`. The samples then go to
:func:`video_env.data._report.finalize` (through
:meth:`~video_env.data._report.LoadOptions.finish`), which applies the common filters and
the missing-video policy and returns a :class:`~video_env.data._report.SampleList`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

from video_env.data._files import PathLike, UnreadableRecord
from video_env.data._parsing import (
    brief,
    letter_of,
    parse_timestamp,
    strip_option_letters,
)
from video_env.data._video_paths import RefusedPath, VideoRoot
from video_env.errors import DatasetError
from video_env.types import MAX_DURATION_S, OPTION_LETTERS, Interval, SampleError, VideoQA

__all__ = ["PathLike", "letter_of", "parse_timestamp", "strip_option_letters"]

#: How a loader treats samples whose video file does not exist.
MissingPolicy: TypeAlias = Literal["keep", "skip", "error"]

#: Intervals may overshoot a known duration by this much (seconds); they are clipped to it.
#: Annotations often round the duration down (NExT-GQA stores whole seconds).
INTERVAL_TOLERANCE = 1.0

#: Text given to an option that is empty in the annotations (the record is kept: the
#: option still has its letter, so letter and index answers keep their meaning).
EMPTY_OPTION = "(empty option)"

#: A record parser: ``(record index, raw record) -> sample(s)``.
Parser: TypeAlias = Callable[[int, Any], "VideoQA | Iterable[VideoQA]"]


class VideoPathError(DatasetError):
    """A record's video path is absolute or leaves the video root.

    Always raised, whatever ``strict`` says: a file pointing outside the video root is
    refused as a whole, not skipped record by record.
    """


@dataclass(frozen=True)
class RecordIssue:
    """An annotation record that was skipped, or kept despite a harmless defect.

    Attributes:
        source: The annotation file.
        index: The record's index in the file (``None`` when no record is to blame).
        id: The record's own id when it has a readable one, else ``None``.
        message: What is wrong with it.
    """

    source: str
    index: int | None
    id: str | None
    message: str

    def __str__(self) -> str:
        where = self.source if self.index is None else f"{self.source}, record {self.index}"
        return f"{where}{f' ({self.id})' if self.id else ''}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        """The issue as a JSON-serialisable dict."""
        return {"source": self.source, "index": self.index, "id": self.id, "message": self.message}


#: How to name a record in the report: fields holding its id, or a function of the record.
IdKeys: TypeAlias = "Sequence[str] | Callable[[Mapping[str, Any]], object]"


def record_id(record: Any, keys: IdKeys) -> str | None:
    """The record's id for the report, or ``None`` when it has no readable one.

    Args:
        record: The raw record.
        keys: Fields to try in order (the first holding a string or number wins), or a
            function of a mapping record (its errors mean "no id").
    """
    if not isinstance(record, Mapping):
        return None
    if callable(keys):
        try:
            value = keys(record)
        except Exception:  # a malformed record simply has no readable id
            return None
        return str(value)[:200] if value is not None else None
    for key in keys:
        value = record.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return str(value)[:200]
    return None


def _reason(exc: DatasetError) -> str:
    """The message of ``exc`` without its ``"<file>, record <i>: "`` prefix."""
    where = exc.source if exc.index is None else f"{exc.source}, record {exc.index}"
    text = str(exc)
    return text[len(where) + 2 :] if text.startswith(f"{where}: ") else text


@dataclass
class RecordContext:
    """Parsing state of one annotation file: names it in errors, tolerates bad records.

    Args:
        path: The annotation file.
        strict: Raise on the first malformed record instead of skipping it.
        videos: The video root its records' video paths must stay in (see :meth:`video`).

    Attributes:
        clipped: Intervals clipped to the video duration.
        skipped: Records skipped as malformed (never with ``strict``).
        repaired: Records kept despite a harmless defect (see :meth:`flag`).
    """

    path: Path
    strict: bool = True
    videos: VideoRoot | None = None
    clipped: int = 0
    skipped: list[RecordIssue] = field(default_factory=list)
    repaired: list[RecordIssue] = field(default_factory=list)
    _current: tuple[int | None, str | None] = field(default=(None, None), init=False, repr=False)
    _pending: list[RecordIssue] | None = field(default=None, init=False, repr=False)

    def error(self, message: str, index: int | None = None) -> DatasetError:
        """A :class:`DatasetError` naming this file (and the record, if given)."""
        return DatasetError(self.path, message, index)

    def collect(
        self, records: Iterable[Any], parse: Parser, id_keys: IdKeys = ("id",)
    ) -> list[VideoQA]:
        """Parse every record with :meth:`attempt`; the samples of those that parse."""
        samples: list[VideoQA] = []
        for index, record in enumerate(records):
            samples.extend(self.attempt(index, record, parse, id_keys))
        return samples

    def attempt(
        self, index: int, record: Any, parse: Parser, id_keys: IdKeys = ("id",)
    ) -> list[VideoQA]:
        """``parse(index, record)``, skipping the record if it is malformed.

        A :class:`DatasetError` (or a :class:`RecursionError`: data nested too deeply)
        raised while parsing is re-raised with ``strict``; otherwise the record is added to
        :attr:`skipped` (its defects flagged so far are dropped) and no sample is returned.
        A :class:`VideoPathError` is always raised. Intervals clipped by a skipped record
        are not counted. Attempts nest (a video record holding several questions): an inner
        failure skips only the inner record.

        Args:
            index: The record's index in the file (named in errors).
            record: The raw record (an :class:`UnreadableRecord` is a malformed one).
            parse: The loader's parser for such a record.
            id_keys: Fields that hold the record's id, for the report.
        """
        outer, self._pending = self._pending, []
        outer_current, self._current = self._current, (index, record_id(record, id_keys))
        clipped = self.clipped
        try:
            try:
                if isinstance(record, UnreadableRecord):
                    raise self.error(record.reason, index)
                parsed = parse(index, record)
                samples = [parsed] if isinstance(parsed, VideoQA) else list(parsed)
            except RecursionError:
                raise self.error("data nested too deeply", index) from None
        except VideoPathError:
            raise
        except DatasetError as exc:
            if self.strict:
                raise
            self.clipped = clipped  # a skipped record's intervals are not counted
            self.skipped.append(RecordIssue(str(self.path), index, self._current[1], _reason(exc)))
            return []
        else:
            (outer if outer is not None else self.repaired).extend(self._pending)
            return samples
        finally:
            self._pending, self._current = outer, outer_current

    def flag(self, message: str) -> None:
        """Report a harmless defect of the record being parsed (it is kept)."""
        index, ident = self._current
        issue = RecordIssue(str(self.path), index, ident, message)
        (self._pending if self._pending is not None else self.repaired).append(issue)

    def field(self, record: Mapping[str, Any], key: str, index: int) -> Any:
        """``record[key]``, or a :class:`DatasetError` if it is absent."""
        if not isinstance(record, Mapping):
            raise self.error(f"expected an object, got {type(record).__name__}", index)
        if key not in record:
            raise self.error(f"missing field {key!r}", index)
        return record[key]

    def text(self, record: Mapping[str, Any], key: str, index: int) -> str:
        """A non-empty string field."""
        value = self.field(record, key, index)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not value.strip():
            raise self.error(f"field {key!r} must be a non-empty string, got {brief(value)}", index)
        return value.strip()

    def options(self, raw: Any, index: int, *, strip_letters: bool = True) -> tuple[str, ...]:
        """Option texts from a list of strings (numbers accepted, ``None`` is empty).

        ``"A. "`` prefixes are stripped (see :func:`strip_option_letters`) unless
        ``strip_letters`` is false. An empty option keeps its letter: it becomes
        :data:`EMPTY_OPTION` and is flagged, as are options sharing one text. A record
        whose options are all empty cannot be asked and is an error.

        Raises:
            DatasetError: If ``raw`` is not a list (a string is not a list of options), it
                holds more than 26 options, an option is not text, or every option is empty.
        """
        if not isinstance(raw, (list, tuple)):
            raise self.error(f"options must be a list, got {brief(raw)}", index)
        if len(raw) > len(OPTION_LETTERS):
            raise self.error(
                f"{len(raw)} options: at most {len(OPTION_LETTERS)} (A-Z) are allowed", index
            )
        texts = []
        for item in raw:
            if item is None:
                item = ""
            elif isinstance(item, (int, float)) and not isinstance(item, bool):
                item = str(item)
            elif not isinstance(item, str):
                raise self.error(f"an option must be text, got {brief(item)}", index)
            texts.append(item)
        stripped = strip_option_letters(texts) if strip_letters else tuple(t.strip() for t in texts)
        empty = [letter_of(i) for i, text in enumerate(stripped) if not text]
        if stripped and len(empty) == len(stripped):
            raise self.error(f"every option is empty: {brief(raw)}", index)
        if empty:
            self.flag(f"empty option {', '.join(empty)} kept as {EMPTY_OPTION!r}")
        seen: dict[str, str] = {}
        for i, text in enumerate(stripped):
            if text and text in seen:
                self.flag(f"options {seen[text]} and {letter_of(i)} are both {brief(text)}")
            seen.setdefault(text, letter_of(i))
        return tuple(text or EMPTY_OPTION for text in stripped)

    def number(self, value: Any, what: str, index: int) -> float:
        """A finite number (numeric strings accepted)."""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.error(f"{what} must be a number, got {brief(value)}", index)
        try:
            number = float(value)
        except ValueError:
            raise self.error(f"{what} must be a number, got {brief(value)}", index) from None
        except OverflowError:  # a JSON integer too large for a float
            raise self.error(f"{what} is out of range: {brief(value)}", index) from None
        if not math.isfinite(number):
            raise self.error(f"{what} must be finite, got {value!r}", index)
        return number

    def duration(self, value: Any, index: int) -> float | None:
        """A positive duration in seconds, at most :data:`MAX_DURATION_S`; ``None`` if absent."""
        if value is None or value == "":
            return None
        seconds = self.time(self.number(value, "duration", index), "duration", index)
        if seconds <= 0:
            raise self.error(f"duration must be > 0, got {brief(value)}", index)
        return seconds

    def time(self, seconds: float, what: str, index: int) -> float:
        """``seconds`` if it is at most :data:`MAX_DURATION_S`, else a :class:`DatasetError`."""
        if seconds > MAX_DURATION_S:
            message = f"{what} {seconds:g} s is over the {MAX_DURATION_S:g} s maximum"
            raise self.error(f"{message} (MAX_DURATION_S)", index)
        return seconds

    def intervals(self, raw: Any, duration: float | None, index: int) -> tuple[Interval, ...]:
        """Intervals from ``[[s, e], ...]`` (numbers or timestamps), checked and clipped.

        An interval ending past a known ``duration`` by at most :data:`INTERVAL_TOLERANCE`
        seconds is clipped to the duration; further out it is an error.
        """
        if raw is None:
            return ()
        if not isinstance(raw, Sequence) or isinstance(raw, str):
            raise self.error(f"intervals must be a list of [start, end], got {brief(raw)}", index)
        return tuple(self.interval(pair, duration, index) for pair in raw)

    def interval(self, pair: Any, duration: float | None, index: int) -> Interval:
        """One ``[start, end]`` interval, checked against ``duration`` (see :meth:`intervals`)."""
        if not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2:
            raise self.error(f"an interval is a [start, end] pair, got {brief(pair)}", index)
        start, end = (self.seconds(v, "interval bound", index) for v in pair)
        if start < 0 or start > end:
            raise self.error(f"bad interval [{start}, {end}]", index)
        if duration is not None and end > duration:
            if end > duration + INTERVAL_TOLERANCE:
                raise self.error(
                    f"interval [{start}, {end}] ends after the video (duration {duration} s)",
                    index,
                )
            self.clipped += 1
            return Interval(min(start, duration), duration)
        return Interval(start, end)

    def seconds(self, value: Any, what: str, index: int) -> float:
        """Seconds (at most :data:`MAX_DURATION_S`) from a number or a ``[H:]MM:SS[.f]`` time."""
        if isinstance(value, str) and ":" in value:
            try:
                value = parse_timestamp(value)
            except ValueError as exc:
                raise self.error(str(exc), index) from None
        return self.time(self.number(value, what, index), what, index)

    def video(self, relative: Any, index: int) -> str:
        """A record's video path, inside :attr:`videos` (see :meth:`VideoRoot.path`).

        Raises:
            DatasetError: If ``relative`` is not a path (a :class:`VideoPathError` if it
                leaves the root).
        """
        if self.videos is None:
            raise ValueError(f"{self.path}: parsed without a video root")
        try:
            return self.videos.path(relative)
        except RefusedPath as exc:
            if exc.leaves_root:
                raise VideoPathError(self.path, str(exc), index) from None
            raise self.error(str(exc), index) from None

    def sample(self, index: int, **fields: Any) -> VideoQA:
        """Build a :class:`VideoQA`, turning its validation errors into :class:`DatasetError`."""
        try:
            return VideoQA(**fields)
        except SampleError as exc:
            raise self.error(str(exc), index) from None

    def form_samples(
        self,
        index: int,
        qid: str,
        forms: Iterable[str],
        letter: str,
        options: tuple[str, ...],
        open_answer: str,
        meta: Callable[[str], dict[str, Any]],
        **common: Any,
    ) -> list[VideoQA]:
        """One sample per form of a question asked both ways (FALCON-Bench, CG-Bench).

        Args:
            index: The record's index in the file.
            qid: The question's id; the samples are ``<qid>-mcq`` and ``<qid>-open``.
            forms: ``"mcq"`` and/or ``"open"`` (see :func:`~video_env.data._parsing.
                parse_form`).
            letter: The answer of the MCQ sample.
            options: The options of the MCQ sample.
            open_answer: The answer of the open sample.
            meta: The ``meta`` of the sample of a form.
            **common: The other fields, shared by both forms.
        """
        samples = []
        for form in forms:
            mcq = form == "mcq"
            samples.append(
                self.sample(
                    index,
                    id=f"{qid}-{form}",
                    answer=letter if mcq else open_answer,
                    options=options if mcq else None,
                    meta=meta(form),
                    **common,
                )
            )
        return samples
