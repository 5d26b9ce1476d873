"""Reading annotation files: JSON, JSON Lines and CSV, each failure a :class:`DatasetError`.

Every reader accepts a UTF-8 byte-order mark (spreadsheet exports write one) and turns a
file nested too deeply for the parser (:class:`RecursionError`) into a
:class:`DatasetError`. A JSON Lines line that is not JSON does not abort the file: it is
returned as an :class:`UnreadableRecord`, which the loaders' per-record guard
(:meth:`~video_env.data._common.RecordContext.attempt`) reports like any malformed record.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from video_env.errors import DatasetError

PathLike: TypeAlias = "str | os.PathLike[str]"

#: Files are decoded with this codec: UTF-8, with an optional byte-order mark.
ENCODING = "utf-8-sig"


@dataclass(frozen=True)
class UnreadableRecord:
    """A JSON Lines line that could not be parsed (why: ``reason``)."""

    reason: str


def _parse(text: str) -> tuple[Any, str | None]:
    """``(value, None)``, or ``(None, what is wrong)`` when ``text`` is not usable JSON."""
    try:
        return json.loads(text), None
    except ValueError as exc:  # JSONDecodeError, or an integer of over 4300 digits
        return None, f"invalid JSON: {exc}"
    except RecursionError:
        return None, "JSON nested too deeply"


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding=ENCODING)
    except FileNotFoundError:
        raise DatasetError(path, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(path, f"cannot read: {exc}") from None


def read_json(path: Path) -> Any:
    """Parse a JSON file, raising :class:`DatasetError` when it is unreadable."""
    data, problem = _parse(_read_text(path))
    if problem is not None:
        raise DatasetError(path, f"cannot read JSON: {problem}")
    return data


def read_jsonl(path: Path) -> list[Any]:
    """The records of a JSON Lines file (blank lines and ``#`` comment lines skipped), in order.

    A line that is not valid JSON becomes an :class:`UnreadableRecord` in its place.
    """
    records: list[Any] = []
    # split on line feeds only: JSON strings may hold U+2028 and other "line breaks"
    for line in _read_text(path).split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        record, problem = _parse(line)
        records.append(record if problem is None else UnreadableRecord(problem))
    return records


def read_records(path: Path, keys: Sequence[str] = ("data", "questions")) -> list[Any]:
    """Records of a ``.jsonl`` file, a JSON array, or a JSON object holding one under ``keys``."""
    if path.suffix == ".jsonl":
        return read_jsonl(path)
    data = read_json(path)
    if isinstance(data, Mapping):
        for key in keys:
            if isinstance(data.get(key), list):
                return list(data[key])
    if not isinstance(data, list):
        raise DatasetError(path, f"expected a JSON array of records, got {type(data).__name__}")
    return data


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """``(header, rows)`` of a CSV file with a header line."""
    try:
        with path.open(encoding=ENCODING, newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            header = list(reader.fieldnames or [])
    except FileNotFoundError:
        raise DatasetError(path, "file not found") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DatasetError(path, f"cannot read CSV: {exc}") from None
    return header, rows


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
