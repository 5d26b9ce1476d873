"""MLVU (dev) loader: one JSON file per task."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from video_env.data._common import (
    MissingPolicy,
    PathLike,
    RecordContext,
    answer_letter,
    read_records,
    strip_option_letters,
)
from video_env.data._report import Filters, SampleList, finalize
from video_env.errors import DatasetError
from video_env.types import VideoQA

NAME = "mlvu"


def _task_files(annotations: PathLike | Sequence[PathLike]) -> list[Path]:
    if isinstance(annotations, (str, os.PathLike)):
        path = Path(annotations)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl"))
            if not files:
                raise DatasetError(path, "no MLVU task files (*.json) in this folder")
            return files
        return [path]
    return [Path(p) for p in annotations]


def _video(video_root: PathLike | None, task: str, name: str) -> str:
    """``<root>/<task>/<video>`` (the MLVU layout), else ``<root>/<video>`` if that exists."""
    if video_root is None:
        return os.path.join(task, name)
    nested = os.path.join(os.fspath(video_root), task, name)
    flat = os.path.join(os.fspath(video_root), name)
    return flat if not os.path.exists(nested) and os.path.exists(flat) else nested


def _parse(
    ctx: RecordContext, record: Mapping[str, Any], index: int, video_root: PathLike | None
) -> VideoQA:
    task = ctx.path.stem
    raw = record.get("candidates") if isinstance(record, Mapping) else None
    answer = ctx.field(record, "answer", index)
    generation = not raw
    options: tuple[str, ...] | None = None
    if generation:
        answer_out = str(answer).strip()
    else:
        if not isinstance(raw, Sequence) or isinstance(raw, str):
            raise ctx.error(f"candidates must be a list, got {raw!r}", index)
        options = strip_option_letters([str(c) for c in raw])
        answer_out = answer_letter(ctx, options, answer, index, "text")
    question_type = str(record.get("question_type") or task)
    return ctx.sample(
        index,
        id=f"{task}-{index}",
        video=_video(video_root, task, ctx.text(record, "video", index)),
        question=ctx.text(record, "question", index),
        answer=answer_out,
        duration=ctx.duration(record.get("duration"), index),
        options=options,
        category=question_type,
        source=NAME,
        meta={
            "task": task,
            "generation": generation,
            "splits": ["dev", "generation" if generation else "mcq"],
        },
    )


def load_mlvu(
    annotations: PathLike | Sequence[PathLike],
    video_root: PathLike | None = None,
    *,
    missing: MissingPolicy = "keep",
    limit: int | None = None,
    split: str | None = None,
    categories: Collection[str] | None = None,
) -> SampleList:
    """Load MLVU dev questions.

    ``annotations`` is the ``json/`` folder of MLVU (every ``*.json`` in it, sorted), one
    task file, or a list of them. Records hold ``video, duration, question, candidates,
    answer (text), question_type``. Multiple-choice answers are turned into letters.
    Generation tasks (no ``candidates``: sub-plot, summary) load as open questions with
    ``meta["generation"] = True``. Videos are ``<video_root>/<task file stem>/<video>``
    (the MLVU layout), or ``<video_root>/<video>`` when only that exists. Ids are
    ``<task>-<record index>``; categories are question types; splits are ``dev`` (all),
    ``mcq`` and ``generation``.

    Args:
        annotations: The task files, or their folder.
        video_root: Folder of the videos; ``None`` skips the missing-video check.
        missing: ``"keep"``, ``"skip"`` or ``"error"`` for samples without a video file.
        limit: Keep at most this many samples.
        split: ``"dev"``, ``"mcq"`` or ``"generation"``.
        categories: Keep these question types.

    Returns:
        The samples, with a load report (see :class:`SampleList`).

    Raises:
        DatasetError: If a file or record is malformed.
        ConfigError: If an argument is invalid.
    """
    contexts = [RecordContext(path) for path in _task_files(annotations)]
    samples: list[VideoQA] = []
    for ctx in contexts:
        for index, record in enumerate(read_records(ctx.path)):
            samples.append(_parse(ctx, record, index, video_root))
    return finalize(
        samples,
        dataset=NAME,
        sources=contexts,
        video_root=video_root,
        missing=missing,
        filters=Filters(limit, split, categories),
        splits=("dev", "mcq", "generation"),
    )
