"""Reading a results folder: its ``run.json``, and the records of the jobs it planned."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.records import EpisodeLog, dedupe
from benchmarks.run_files import read_run_file
from video_env.errors import ConfigError

if TYPE_CHECKING:
    from benchmarks.jobs import Job

RUN_JSON = "run.json"

#: The type of each ``run.json`` field that readers use (a hand edit can put anything there).
_FIELD_TYPES: dict[str, tuple[type, str]] = {
    "config": (dict, "an object"),
    "provenance": (dict, "an object"),
    "plan": (dict, "an object"),
    "fingerprint": (str, "a string"),
    "random_weights": (list, "a list"),
}


def read_run_json(folder: str | os.PathLike[str], missing_ok: bool = False) -> dict[str, Any]:
    """The ``run.json`` of a results folder.

    Args:
        folder: The results folder.
        missing_ok: Return ``{}`` when the folder has no ``run.json`` (results written
            before it existed) instead of raising.

    Raises:
        ConfigError: If it is missing (unless ``missing_ok``), a link or not a regular
            file, empty, truncated, not UTF-8, not a JSON object, or a field readers use
            has the wrong type.
    """
    path = Path(folder) / RUN_JSON
    data = read_run_file(path)  # never through a link
    if data is None:
        if missing_ok:
            return {}
        raise ConfigError(f"{path} is missing: not a results folder")
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise _damaged(path, f"{type(exc).__name__}: {str(exc)[:80]}") from None
    if not isinstance(value, dict):
        raise _damaged(path, f"a JSON {type(value).__name__}, not an object")
    for field, (kind, described) in _FIELD_TYPES.items():
        if value.get(field) is not None and not isinstance(value[field], kind):
            raise _damaged(
                path, f"its {field} is a JSON {type(value[field]).__name__}, not {described}"
            )
    return value


def _damaged(path: Path, what: str) -> ConfigError:
    return ConfigError(
        f"{path} is damaged ({what}); restore it from a backup, or delete it (`bench report` "
        "then shows no set-up; resuming then needs --fresh or another --out)"
    )


def plan_entry(jobs: Sequence[Job]) -> dict[str, Any]:
    """The run's plan as ``run.json`` keeps it: which jobs the run's records may belong to.

    A plan is every (env, policy) pair x sample x seed; it is stored as those three lists
    (a few kilobytes for any run), or as the list of job keys should it not be one.
    """
    pairs = list(dict.fromkeys((job.env, job.policy) for job in jobs))
    samples = list(dict.fromkeys(job.sample_id for job in jobs))
    seeds = list(dict.fromkeys(job.seed for job in jobs))
    entry = {"episodes": len(jobs), "pairs": [list(p) for p in pairs], "samples": samples,
             "seeds": seeds}  # fmt: skip
    if planned_keys(entry) != {job.key for job in jobs}:
        entry = {"episodes": len(jobs), "jobs": [job.key for job in jobs]}
    return entry


def planned_keys(entry: dict[str, Any]) -> set[str]:
    """The job keys of a plan written by :func:`plan_entry`.

    Raises:
        ConfigError: If the entry is not such a plan (a hand-edited ``run.json``).
    """
    try:
        if "jobs" in entry:
            return {_text(key) for key in entry["jobs"]}
        return {
            f"{_text(env)}|{_text(policy)}|{_text(sample)}|{int(seed)}"
            for env, policy in entry["pairs"]
            for sample in entry["samples"]
            for seed in entry["seeds"]
        }
    except (KeyError, TypeError, ValueError):
        raise ConfigError(
            f"the plan in {RUN_JSON} is damaged (not the lists a run writes); restore it "
            "from a backup, or delete the run.json"
        ) from None


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value


def planned_records(folder: str | os.PathLike[str], meta: dict[str, Any]) -> list[dict[str, Any]]:
    """One record per job of the folder's plan (from ``meta``, its ``run.json``).

    Records of jobs outside the plan and lines that hold no sound record are skipped with
    a warning naming their lines (:class:`~benchmarks.records.EpisodeLogWarning`). A
    ``run.json`` written before plans were kept counts every record.
    """
    jobs = planned_keys(meta["plan"]) if meta.get("plan") is not None else None
    return dedupe(EpisodeLog(folder).load(jobs=jobs))
