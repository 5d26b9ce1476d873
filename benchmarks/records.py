"""The results folder: an append-only episode log, and atomic writes of derived files.

Its files are opened without following links (:mod:`benchmarks.run_files`).
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections import defaultdict
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from benchmarks.run_files import open_run_file, read_run_file, write_atomic

EPISODES = "episodes.jsonl"


class BenchWarning(UserWarning):
    """Something went wrong in a benchmark run and was survived (``bench`` shows one line)."""


class EpisodeLogWarning(BenchWarning):
    """A line of ``episodes.jsonl`` was skipped or repaired."""


#: Fields every episode record has (strings): what the summaries group and dedupe by.
REQUIRED_FIELDS = ("job", "env", "policy")
#: Line numbers a warning lists before it says how many more.
_LISTED = 10
_KEPT = "skipped (the line is kept: fix or delete it)"


class EpisodeLog:
    """``episodes.jsonl``: one record per finished episode, flushed to disk as it comes.

    A run killed mid-write leaves at most a partial last line. :meth:`load` never shortens
    the file by more than that line: a line elsewhere that is not an episode record (a
    blank line, an edit, bytes that are not UTF-8, ``{}``, a number that is not finite) or
    a record of a job outside the run's plan (pasted from another run) is skipped, never
    counted: an :class:`EpisodeLogWarning` names its line number, and the line stays in
    the file for the user to fix. Lines with the same problem share one warning.

    Args:
        folder: The results folder.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.path = Path(folder) / EPISODES

    def holds_lines(self) -> bool:
        """Whether the log holds anything but blank lines (records or not, planned or not)."""
        try:
            with open_run_file(self.path, "rb") as log:
                return any(line.strip() for line in log)  # stops at the first such line
        except FileNotFoundError:
            return False

    def load(
        self, repair: bool = False, jobs: Collection[str] | None = None
    ) -> list[dict[str, Any]]:
        """The episode records of the log, in file order.

        Args:
            repair: Remove a partial last line (a write cut by a kill) from the file, or
                end a complete last record that lacks its newline. Only a run holding the
                folder's lock repairs; readers (``bench report``) only skip that line,
                since a running benchmark may be writing it.
            jobs: The keys of the run's planned jobs: a record of any other job (a line
                pasted from another run) is skipped, with a warning naming its line.
        """
        data = read_run_file(self.path)
        if data is None:
            return []
        lines = data.split(b"\n")
        tail = lines.pop()  # what follows the last newline: b"" unless a write was cut
        records = []
        skipped: dict[str, list[int]] = defaultdict(list)  # problem -> line numbers
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue  # a blank line holds no record
            record, problem = _parse_record(line, jobs)
            if record is None:
                skipped[f"{problem}; {_KEPT}"].append(number)
            else:
                records.append(record)
        if tail.strip():
            record, problem = _parse_record(tail, jobs)
            cut = problem.startswith("not JSON")  # a complete line is JSON: this write was cut
            if record is not None:
                records.append(record)
            elif not cut:
                skipped[f"{problem}; {_KEPT}"].append(len(lines) + 1)
            elif repair:
                with open_run_file(self.path, "r+b", in_place=True) as f:
                    f.truncate(len(data) - len(tail))
                skipped["an incomplete last record (a cut write) removed"].append(len(lines) + 1)
            else:
                skipped[f"incomplete last record skipped ({problem})"].append(len(lines) + 1)
            if repair and not cut:  # a complete line lacking its newline: the next append
                with open_run_file(self.path, "ab", in_place=True) as f:  # not run on from it
                    f.write(b"\n")
        for message, numbers in skipped.items():
            self._warn(numbers, message)
        return records

    def _warn(self, numbers: list[int], message: str) -> None:
        shown = ", ".join(str(n) for n in numbers[:_LISTED])
        if len(numbers) > _LISTED:
            shown += f" and {len(numbers) - _LISTED} more"
        where = f"line {shown}" if len(numbers) == 1 else f"lines {shown}"
        warnings.warn(f"{self.path} {where}: {message}", EpisodeLogWarning, stacklevel=3)

    def append(self, record: dict[str, Any]) -> None:
        """Append a record and flush it to disk."""
        try:
            text = json.dumps(record, ensure_ascii=False, default=_json_default, allow_nan=False)
        except ValueError:  # a NaN or infinity: JSON has none, a reader would refuse it
            text = json.dumps(
                _finite(record), ensure_ascii=False, default=_json_default, allow_nan=False
            )
        # a lone surrogate (an LLM reply's "\ud800") is written as its JSON escape, which
        # reads back as the same string: UTF-8 has no byte for it
        line = (text + "\n").encode("utf-8", errors="backslashreplace")
        with open_run_file(self.path, "ab", in_place=True) as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())


def _parse_record(
    line: bytes, jobs: Collection[str] | None = None
) -> tuple[dict[str, Any] | None, str]:
    """A record from one line of the log, or ``None`` and what is wrong with the line.

    A line holding a number that is not finite (``NaN``, ``Infinity``, ``1e999``) was
    not written by a run (:meth:`EpisodeLog.append` writes ``null`` there), nor was a
    record of a job outside ``jobs`` (when given).
    """
    try:
        value = json.loads(line, parse_constant=_not_finite, parse_float=_finite_float)
    except _NotFinite as exc:
        return None, f"a number that is not finite ({exc})"
    except (ValueError, RecursionError) as exc:  # JSON or UTF-8 errors
        return None, f"not JSON ({type(exc).__name__}: {str(exc)[:80]})"
    if not isinstance(value, dict):
        return None, f"not an episode record (a JSON {type(value).__name__})"
    missing = [k for k in REQUIRED_FIELDS if not isinstance(value.get(k), str)]
    if missing:
        return None, f"not an episode record (no {', '.join(missing)})"
    if jobs is not None and value["job"] not in jobs:
        return None, "a record of a job that is not in this run's plan (run.json)"
    return value, ""


class _NotFinite(Exception):
    """A JSON number that is not finite."""


def _not_finite(text: str) -> float:
    raise _NotFinite(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text[:40])
    return value


def _finite(value: Any) -> Any:
    """``value`` with every number that is not finite replaced by ``None``."""
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        value = value.tolist()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


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
