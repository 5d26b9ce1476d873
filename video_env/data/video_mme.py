"""Video-MME loader (nested per-video records or one row per question)."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

from video_env.data._common import (
    MissingPolicy,
    PathLike,
    RecordContext,
    answer_letter,
    find_file,
    read_records,
    strip_option_letters,
    video_path,
)
from video_env.data._report import Filters, SampleList, finalize
from video_env.types import VideoQA

NAME = "video-mme"
#: Duration buckets of Video-MME (its splits).
DURATIONS = ("short", "medium", "long")


def _rows(ctx: RecordContext, records: list[Any]) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """``(record index, flat question row)``, unnesting per-video records."""
    for index, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise ctx.error(f"expected an object, got {type(record).__name__}", index)
        questions = record.get("questions")
        if questions is None:
            yield index, record
            continue
        if not isinstance(questions, Sequence) or isinstance(questions, str):
            raise ctx.error(f"'questions' must be a list, got {questions!r}", index)
        video = {k: v for k, v in record.items() if k != "questions"}
        for question in questions:
            if not isinstance(question, Mapping):
                raise ctx.error(f"a question must be an object, got {question!r}", index)
            yield index, {**video, **question}


def _parse(
    ctx: RecordContext, row: Mapping[str, Any], index: int, video_root: PathLike | None
) -> VideoQA:
    video_id = ctx.text(row, "video_id", index)
    file_id = str(row.get("videoID") or video_id)
    raw = ctx.field(row, "options", index)
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise ctx.error(f"options must be a list, got {raw!r}", index)
    options = strip_option_letters([str(o) for o in raw])
    bucket = str(row.get("duration") or "")
    return ctx.sample(
        index,
        id=ctx.text(row, "question_id", index),
        video=video_path(video_root, f"{file_id}.mp4"),
        question=ctx.text(row, "question", index),
        answer=answer_letter(ctx, options, ctx.field(row, "answer", index), index),
        options=options,
        category=str(row["task_type"]) if row.get("task_type") else None,
        source=NAME,
        meta={
            "video_id": video_id,
            "videoID": file_id,
            "duration_bucket": bucket,
            "domain": row.get("domain"),
            "sub_category": row.get("sub_category"),
            "splits": [bucket] if bucket else [],
        },
    )


def load_video_mme(
    annotations: PathLike,
    video_root: PathLike | None = None,
    *,
    missing: MissingPolicy = "keep",
    limit: int | None = None,
    split: str | None = None,
    categories: Collection[str] | None = None,
) -> SampleList:
    """Load Video-MME questions.

    Accepts per-video records ``video_id, duration, domain, sub_category, [videoID,]
    questions: [{question_id, task_type, question, options, answer}]`` and the flattened
    one-row-per-question form (with ``videoID``), as a JSON array or JSONL (a folder is
    searched for ``videomme.json``, ``test.json``, ``video_mme.jsonl``). ``"A. "`` prefixes
    are stripped from the options. Videos are ``<videoID>.mp4`` (``<video_id>.mp4`` when
    there is no ``videoID``). ``duration`` is a bucket, not seconds, so durations stay
    unknown; the buckets are the splits (``short``, ``medium``, ``long``) and task types
    the categories.

    Args:
        annotations: The annotation file, or a folder holding it.
        video_root: Folder of the videos; ``None`` skips the missing-video check.
        missing: ``"keep"``, ``"skip"`` or ``"error"`` for samples without a video file.
        limit: Keep at most this many samples.
        split: ``"short"``, ``"medium"`` or ``"long"``.
        categories: Keep these task types.

    Returns:
        The samples, with a load report (see :class:`SampleList`).

    Raises:
        DatasetError: If a file or record is malformed.
        ConfigError: If an argument is invalid.
    """
    names = ("videomme.json", "video_mme.json", "test.json", "video_mme.jsonl")
    ctx = RecordContext(find_file(annotations, names, "Video-MME annotation"))
    rows = _rows(ctx, read_records(ctx.path))
    samples = [_parse(ctx, row, index, video_root) for index, row in rows]
    return finalize(
        samples,
        dataset=NAME,
        sources=[ctx],
        video_root=video_root,
        missing=missing,
        filters=Filters(limit, split, categories),
        splits=DURATIONS,
    )
