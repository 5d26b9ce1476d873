"""The results folder: an append-only episode log, and atomic writes of derived files."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

EPISODES = "episodes.jsonl"


class EpisodeLog:
    """``episodes.jsonl``: one record per finished episode, flushed to disk as it comes.

    A run killed mid-write leaves at most a partial last line; :meth:`load` drops it and
    truncates the file back to the last complete record, so the log is never corrupt.

    Args:
        folder: The results folder.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.path = Path(folder) / EPISODES

    def load(self) -> list[dict[str, Any]]:
        """The complete records (repairing a partial last line)."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        records, good = [], 0
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                break
            good += len(line)
        if good < len(data):
            with self.path.open("r+b") as f:
                f.truncate(good)
        return records

    def append(self, record: dict[str, Any]) -> None:
        """Append a record and flush it to disk."""
        line = json.dumps(record, ensure_ascii=False, default=_json_default) + "\n"
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())


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
    """One record per job (the first), in job order.

    Executors finish episodes in any order, and a log written by two runs at once may
    hold a job twice.
    """
    seen: dict[str, dict[str, Any]] = {}
    for record in records:
        seen.setdefault(str(record.get("job", "")), record)
    return [seen[k] for k in sorted(seen)]
