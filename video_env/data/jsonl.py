"""The library's own dataset format: one :meth:`VideoQA.to_dict` record per line."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from video_env.data._common import PathLike, RecordContext
from video_env.data._files import read_records
from video_env.data._report import LoadArgs, LoadOptions, SampleList
from video_env.errors import DatasetError
from video_env.types import SampleError, VideoQA

if TYPE_CHECKING:
    from typing_extensions import Unpack

NAME = "jsonl"


def save_jsonl(
    samples: Iterable[VideoQA], path: PathLike, *, video_root: PathLike | None = None
) -> Path:
    """Write samples as JSON Lines (one :meth:`VideoQA.to_dict` per line).

    Args:
        samples: Samples whose videos are file paths.
        path: The file to write (its folder is created).
        video_root: When given, video paths inside it are written relative to it, so the
            file can be loaded elsewhere with another root. Other paths are written
            absolute, and loading them needs ``load_jsonl(..., allow_absolute=True)``.

    Returns:
        The path written.

    Raises:
        SampleError: If a sample's video is in memory (not a path).
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    root = os.path.abspath(video_root) if video_root is not None else None
    lines = []
    for sample in samples:
        record = sample.to_dict()
        if root is not None:
            absolute = os.path.abspath(record["video"])
            if os.path.commonpath([absolute, root]) == root:
                record["video"] = os.path.relpath(absolute, root)
        lines.append(json.dumps(record, ensure_ascii=False))
    out.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return out


def _parse(ctx: RecordContext, index: int, record: Any) -> VideoQA:
    if not isinstance(record, Mapping):
        raise ctx.error(f"expected an object, got {type(record).__name__}", index)
    fields = {**record, "video": ctx.video(record.get("video"), index)}
    if fields.get("options") is not None:
        fields["options"] = ctx.options(fields["options"], index, strip_letters=False)
    try:
        return VideoQA.from_dict(fields)
    except KeyError as exc:
        raise ctx.error(f"missing field {exc}", index) from None
    except (SampleError, TypeError, ValueError) as exc:
        if isinstance(exc, DatasetError):
            raise
        raise ctx.error(str(exc), index) from None


def load_jsonl(
    annotations: PathLike,
    video_root: PathLike | None = None,
    **options: Unpack[LoadArgs],
) -> SampleList:
    """Load samples written by :func:`save_jsonl` (``.jsonl``, or a ``.json`` array).

    Relative video paths resolve against ``video_root``, else against the file's folder,
    and may not leave it; absolute paths are refused unless ``allow_absolute``. Since
    every path is then known, missing videos are always checked (existence only). Splits
    are the records' ``meta["splits"]``. A malformed record (or a line that is not JSON)
    is skipped and reported in :attr:`SampleList.skipped_records` unless ``strict``.

    Args:
        annotations: The file.
        video_root: Folder relative video paths are resolved against.
        **options: What every loader takes (:class:`~video_env.data.LoadArgs`); here ``split``:
            keep samples whose ``meta["splits"]`` holds this name; ``categories``: keep these
            categories. ``allow_absolute``: use absolute video paths as they are.

    Returns:
        The samples of the file, with a load report (see :class:`SampleList`).

    Raises:
        DatasetError: If the file is malformed, a record is (with ``strict``), or a video
            path leaves the root (:class:`~video_env.data.VideoPathError`).
        ConfigError: If an argument is invalid.
    """
    path = Path(annotations)
    root = Path(video_root) if video_root is not None else path.parent
    load = LoadOptions(root, **options)
    ctx = load.context(path)
    records = read_records(ctx.path, keys=("data", "samples"))
    samples = ctx.collect(records, functools.partial(_parse, ctx))
    return load.finish(NAME, samples, [ctx])
