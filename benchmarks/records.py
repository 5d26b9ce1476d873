"""The results folder: an append-only episode log, and atomic writes of derived files."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

EPISODES = "episodes.jsonl"


class BenchWarning(UserWarning):
    """Something went wrong in a benchmark run and was survived (``bench`` shows one line)."""


class EpisodeLogWarning(BenchWarning):
    """A line of ``episodes.jsonl`` was skipped or repaired."""


#: Fields every episode record has (strings): what the summaries group and dedupe by.
REQUIRED_FIELDS = ("job", "env", "policy")


class EpisodeLog:
    """``episodes.jsonl``: one record per finished episode, flushed to disk as it comes.

    A run killed mid-write leaves at most a partial last line. :meth:`load` never shortens
    the file by more than that line: a line elsewhere that is not an episode record (a
    blank line, an edit, bytes that are not UTF-8, ``{}``) is skipped with an
    :class:`EpisodeLogWarning` naming its line number, and stays in the file for the user
    to fix.

    Args:
        folder: The results folder.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.path = Path(folder) / EPISODES

    def load(self, repair: bool = False) -> list[dict[str, Any]]:
        """The episode records of the log, in file order.

        Args:
            repair: Remove a partial last line (a write cut by a kill) from the file, or
                end a complete last record that lacks its newline. Only a run holding the
                folder's lock repairs; readers (``bench report``) only skip that line,
                since a running benchmark may be writing it.
        """
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        tail = lines.pop()  # what follows the last newline: b"" unless a write was cut
        records = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue  # a blank line holds no record
            record, problem = _parse_record(line)
            if record is None:
                self._warn(number, f"{problem}; skipped (the line is kept: fix or delete it)")
            else:
                records.append(record)
        if tail.strip():
            record, problem = _parse_record(tail)
            if record is not None:
                records.append(record)
                if repair:
                    with self.path.open("ab") as f:
                        f.write(b"\n")
            elif repair:
                with self.path.open("r+b") as f:
                    f.truncate(len(data) - len(tail))
                self._warn(len(lines) + 1, "an incomplete last record (a cut write) removed")
            else:
                self._warn(len(lines) + 1, f"incomplete last record skipped ({problem})")
        return records

    def _warn(self, number: int, message: str) -> None:
        warnings.warn(f"{self.path} line {number}: {message}", EpisodeLogWarning, stacklevel=3)

    def append(self, record: dict[str, Any]) -> None:
        """Append a record and flush it to disk."""
        line = json.dumps(record, ensure_ascii=False, default=_json_default) + "\n"
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())


def _parse_record(line: bytes) -> tuple[dict[str, Any] | None, str]:
    """A record from one line of the log, or ``None`` and what is wrong with the line."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError) as exc:  # JSON or UTF-8 errors
        return None, f"not JSON ({type(exc).__name__}: {str(exc)[:80]})"
    if not isinstance(value, dict):
        return None, f"not an episode record (a JSON {type(value).__name__})"
    missing = [k for k in REQUIRED_FIELDS if not isinstance(value.get(k), str)]
    if missing:
        return None, f"not an episode record (no {', '.join(missing)})"
    return value, ""


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write a file whole or not at all (a temporary file, then a rename)."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)


def write_json(path: str | os.PathLike[str], value: Any) -> None:
    """Write JSON atomically."""
    write_atomic(path, json.dumps(value, indent=2, default=_json_default) + "\n")


def dedupe(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per job (the first, except that a real record replaces a ``lost`` one).

    Executors finish episodes in any order, and a log written by two runs at once may
    hold a job twice; a job whose worker died has a ``lost`` record until a resumed run
    reruns it.
    """
    seen: dict[str, dict[str, Any]] = {}
    for record in records:
        key = str(record.get("job", ""))
        if key not in seen or (seen[key].get("lost") and not record.get("lost")):
            seen[key] = record
    return [seen[k] for k in sorted(seen)]
