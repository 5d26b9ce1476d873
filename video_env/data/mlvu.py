"""MLVU (dev) loader: one JSON file per task."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from video_env.data._answers import answer_letter
from video_env.data._common import PathLike, RecordContext
from video_env.data._files import read_records
from video_env.data._report import LoadArgs, LoadOptions, SampleList
from video_env.errors import DatasetError
from video_env.types import VideoQA

if TYPE_CHECKING:
    from typing_extensions import Unpack

NAME = "mlvu"
_ID = ("video",)


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


def _video(ctx: RecordContext, index: int, name: str) -> str:
    """``<root>/<task>/<video>`` (the MLVU layout), else ``<root>/<video>`` if that exists."""
    flat = ctx.video(name, index)
    nested = ctx.video(os.path.join(ctx.path.stem, name), index)
    if ctx.videos is None or ctx.videos.root is None:
        return nested
    return flat if not os.path.exists(nested) and os.path.exists(flat) else nested


def _parse(ctx: RecordContext, index: int, record: Any) -> VideoQA:
    task = ctx.path.stem
    if not isinstance(record, Mapping):
        raise ctx.error(f"expected an object, got {type(record).__name__}", index)
    raw = record.get("candidates")
    answer = ctx.field(record, "answer", index)
    generation = raw is None or raw == "" or (isinstance(raw, (list, tuple)) and not raw)
    options: tuple[str, ...] | None = None
    if generation:
        answer_out = str(answer).strip()
    else:
        options = ctx.options(raw, index)
        answer_out = answer_letter(ctx, options, answer, index, "text")
    question_type = str(record.get("question_type") or task)
    return ctx.sample(
        index,
        id=f"{task}-{index}",
        video=_video(ctx, index, ctx.text(record, "video", index)),
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
    **options: Unpack[LoadArgs],
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
        **options: What every loader takes (:class:`~video_env.data.LoadArgs`); here ``split``:
            ``"dev"``, ``"mcq"`` or ``"generation"``; ``categories``: keep these question
            types. ``allow_absolute``: use absolute ``video`` paths as they are.

    Returns:
        One sample per record of each task file (``<task>-<index>``), with a load report
        (see :class:`SampleList`).

    Raises:
        DatasetError: On a malformed file or (with ``strict``) record, or an unsafe video path.
        ConfigError: If an argument is invalid.
    """
    load = LoadOptions(video_root, **options)
    contexts = [load.context(path) for path in _task_files(annotations)]
    samples: list[VideoQA] = []
    for ctx in contexts:
        samples += ctx.collect(read_records(ctx.path), functools.partial(_parse, ctx), _ID)
    return load.finish(NAME, samples, contexts, ("dev", "mcq", "generation"))
