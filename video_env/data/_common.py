"""Parsing helpers shared by the dataset loaders.

Every loader parses its annotation files into :class:`~video_env.types.VideoQA` samples
through a :class:`RecordContext` (which names the file and record index in errors), then
hands them to :func:`video_env.data._report.finalize`, which applies the common filters
and the missing-video policy and returns a :class:`~video_env.data._report.SampleList`.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

from video_env.errors import ConfigError, DatasetError
from video_env.types import OPTION_LETTERS, Interval, SampleError, VideoQA

#: How a loader treats samples whose video file does not exist.
MissingPolicy: TypeAlias = Literal["keep", "skip", "error"]
PathLike: TypeAlias = "str | os.PathLike[str]"

#: Intervals may overshoot a known duration by this much (seconds); they are clipped to it.
#: Annotations often round the duration down (NExT-GQA stores whole seconds).
INTERVAL_TOLERANCE = 1.0

_TIMESTAMP = re.compile(r"^\s*(?:(\d+):)?(\d+):(\d{1,2}(?:\.\d+)?)\s*$")
_OPTION_PREFIX = re.compile(r"^\s*\(?([A-Z])\s*[.):：]\s*")


@dataclass
class RecordContext:
    """Parsing state of one annotation file: names it in errors, counts clipping.

    Args:
        path: The annotation file.
    """

    path: Path
    clipped: int = 0

    def error(self, message: str, index: int | None = None) -> DatasetError:
        """A :class:`DatasetError` naming this file (and the record, if given)."""
        return DatasetError(self.path, message, index)

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
            raise self.error(f"field {key!r} must be a non-empty string, got {value!r}", index)
        return value.strip()

    def number(self, value: Any, what: str, index: int) -> float:
        """A finite number (numeric strings accepted)."""
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise self.error(f"{what} must be a number, got {value!r}", index) from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(f"{what} must be a number, got {value!r}", index)
        if not math.isfinite(value):
            raise self.error(f"{what} must be finite, got {value!r}", index)
        return float(value)

    def duration(self, value: Any, index: int) -> float | None:
        """A positive duration in seconds, ``None`` when absent."""
        if value is None or value == "":
            return None
        seconds = self.number(value, "duration", index)
        if seconds <= 0:
            raise self.error(f"duration must be > 0, got {value!r}", index)
        return seconds

    def intervals(self, raw: Any, duration: float | None, index: int) -> tuple[Interval, ...]:
        """Intervals from ``[[s, e], ...]`` (numbers or timestamps), checked and clipped.

        An interval ending past a known ``duration`` by at most :data:`INTERVAL_TOLERANCE`
        seconds is clipped to the duration; further out it is an error.
        """
        if raw is None:
            return ()
        if not isinstance(raw, Sequence) or isinstance(raw, str):
            raise self.error(f"intervals must be a list of [start, end], got {raw!r}", index)
        return tuple(self.interval(pair, duration, index) for pair in raw)

    def interval(self, pair: Any, duration: float | None, index: int) -> Interval:
        """One ``[start, end]`` interval, checked against ``duration`` (see :meth:`intervals`)."""
        if not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2:
            raise self.error(f"an interval is a [start, end] pair, got {pair!r}", index)
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
        """Seconds from a number or a ``[H:]MM:SS[.f]`` timestamp."""
        if isinstance(value, str) and ":" in value:
            try:
                return parse_timestamp(value)
            except ValueError as exc:
                raise self.error(str(exc), index) from None
        return self.number(value, what, index)

    def sample(self, index: int, **fields: Any) -> VideoQA:
        """Build a :class:`VideoQA`, turning its validation errors into :class:`DatasetError`."""
        try:
            return VideoQA(**fields)
        except SampleError as exc:
            raise self.error(str(exc), index) from None


def parse_timestamp(text: str) -> float:
    """Seconds from ``MM:SS`` or ``H:MM:SS`` (fractional seconds allowed).

    Without hours the minutes may exceed 59 (``"75:10"``).

    Raises:
        ValueError: If the text is not a timestamp.
    """
    match = _TIMESTAMP.match(text)
    if match is None:
        raise ValueError(f"not a [H:]MM:SS timestamp: {text!r}")
    hours, minutes, seconds = match.groups()
    if float(seconds) >= 60 or (hours is not None and int(minutes) >= 60):
        raise ValueError(f"not a [H:]MM:SS timestamp: {text!r}")
    return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)


def parse_time_range(text: str) -> tuple[float, float]:
    """``(start, end)`` seconds from ``"MM:SS-MM:SS"`` (or ``H:MM:SS`` bounds).

    Raises:
        ValueError: If the text is not two timestamps joined by a dash.
    """
    parts = [p for p in re.split(r"\s*[-–~]\s*", text.strip()) if p]
    if len(parts) != 2:
        raise ValueError(f"not a time range 'MM:SS-MM:SS': {text!r}")
    return parse_timestamp(parts[0]), parse_timestamp(parts[1])


def strip_option_letters(options: Sequence[str]) -> tuple[str, ...]:
    """Remove ``"A. "`` / ``"(A) "`` / ``"A) "`` prefixes when every option has its own letter.

    Options are left unchanged unless option ``i`` starts with letter ``i`` for all ``i``.
    """
    matches = [_OPTION_PREFIX.match(o) for o in options]
    if all(m is not None and m.group(1) == OPTION_LETTERS[i] for i, m in enumerate(matches)):
        return tuple(
            o[m.end() :].strip() for o, m in zip(options, matches, strict=True) if m is not None
        )
    return tuple(o.strip() for o in options)


def letter_of(index: int) -> str:
    """Option letter of a zero-based index."""
    return OPTION_LETTERS[index]


def answer_letter(
    ctx: RecordContext,
    options: Sequence[str],
    answer: Any,
    index: int,
    kind: Literal["letter", "index", "text"] = "letter",
) -> str:
    """Normalise an MCQ answer to its option letter.

    Args:
        ctx: The file being parsed (for errors).
        options: The option texts.
        answer: The raw answer.
        index: Record index (for errors).
        kind: How the benchmark gives the answer: an option letter (``"B"``, ``"(B)"``),
            a zero-based index (``1``, ``"1"``) or the option text (matched exactly
            after stripping, then case-insensitively, then without an ``"A. "`` prefix;
            the first match wins).

    Raises:
        DatasetError: If the answer does not name one of the options.
    """
    n = len(options)
    if kind == "letter" and isinstance(answer, str):
        letter = answer.strip().strip("()").rstrip(".").upper()
        if len(letter) == 1 and letter in OPTION_LETTERS[:n]:
            return letter
    elif kind == "index":
        if isinstance(answer, str) and answer.strip().isdigit():
            answer = int(answer)
        if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < n:
            return letter_of(answer)
    elif kind == "text" and isinstance(answer, (str, int, float)):
        stripped = [o.strip() for o in options]
        lowered = [o.lower() for o in stripped]
        key = str(answer).strip()
        prefix = _OPTION_PREFIX.match(key)
        for text in (key, key[prefix.end() :].strip() if prefix else key):
            if text in stripped:
                return letter_of(stripped.index(text))
            if text.lower() in lowered:
                return letter_of(lowered.index(text.lower()))
    raise ctx.error(f"answer {answer!r} is not an option {kind} of {list(options)}", index)


def read_json(path: Path) -> Any:
    """Parse a JSON file, raising :class:`DatasetError` when it is unreadable."""
    try:
        with path.open(encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise DatasetError(path, "file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(path, f"cannot read JSON: {exc}") from None


def read_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """``(index, record)`` for each non-blank line of a JSON Lines file."""
    try:
        with path.open(encoding="utf-8") as f:
            lines = f.readlines()
    except FileNotFoundError:
        raise DatasetError(path, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(path, f"cannot read: {exc}") from None
    index = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            yield index, json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(path, f"invalid JSON: {exc}", index) from None
        index += 1


def read_records(path: Path, keys: Sequence[str] = ("data", "questions")) -> list[Any]:
    """Records of a ``.jsonl`` file, a JSON array, or a JSON object holding one under ``keys``."""
    if path.suffix == ".jsonl":
        return [record for _, record in read_jsonl(path)]
    data = read_json(path)
    if isinstance(data, Mapping):
        for key in keys:
            if isinstance(data.get(key), list):
                return list(data[key])
    if not isinstance(data, list):
        raise DatasetError(path, f"expected a JSON array of records, got {type(data).__name__}")
    return data


def find_file(annotations: PathLike, names: Sequence[str], what: str) -> Path:
    """``annotations`` itself if it is a file, else the first of ``names`` inside it."""
    path = Path(annotations)
    if path.is_dir():
        for name in names:
            if (path / name).is_file():
                return path / name
        raise DatasetError(path, f"no {what} file ({' or '.join(names)}) in this folder")
    if not path.exists():
        raise DatasetError(path, "file not found")
    return path


def video_path(video_root: PathLike | None, relative: str) -> str:
    """``video_root / relative`` (just ``relative`` when there is no root)."""
    return relative if video_root is None else os.path.join(os.fspath(video_root), relative)


#: Question forms of benchmarks that have both (FALCON-Bench, CG-Bench).
FORMS = ("mcq", "open")


def parse_form(form: str) -> tuple[str, ...]:
    """The forms to emit for ``form="mcq" | "open" | "both"``.

    Raises:
        ConfigError: For any other value.
    """
    if form == "both":
        return FORMS
    if form in FORMS:
        return (form,)
    raise ConfigError(f"form must be 'mcq', 'open' or 'both', got {form!r}")
