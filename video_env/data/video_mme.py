"""Video-MME loader (nested per-video records or one row per question)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from video_env.data._answers import answer_letter
from video_env.data._common import PathLike, RecordContext
from video_env.data._files import find_file, read_records
from video_env.data._parsing import brief
from video_env.data._report import LoadArgs, LoadOptions, SampleList
from video_env.types import VideoQA

if TYPE_CHECKING:
    from typing_extensions import Unpack

NAME = "video-mme"
#: Duration buckets of Video-MME (its splits).
DURATIONS = ("short", "medium", "long")
_ID_KEYS = ("question_id", "video_id")


def _parse_record(ctx: RecordContext, record: Any, index: int) -> list[VideoQA]:
    """The samples of one record: a flat question row, or a video with its questions.

    A malformed question of a video skips that question only.
    """
    if not isinstance(record, Mapping):
        raise ctx.error(f"expected an object, got {type(record).__name__}", index)
    questions = record.get("questions")
    if questions is None:
        return [_parse(ctx, record, index)]
    if not isinstance(questions, Sequence) or isinstance(questions, str):
        raise ctx.error(f"'questions' must be a list, got {brief(questions)}", index)
    video = {k: v for k, v in record.items() if k != "questions"}
    samples: list[VideoQA] = []
    for question in questions:
        samples += ctx.attempt(index, question, lambda i, q: _parse(ctx, q, i, video), _ID_KEYS)
    return samples


def _parse(
    ctx: RecordContext,
    row: Any,
    index: int,
    video: Mapping[str, Any] | None = None,
) -> VideoQA:
    """One question row (merged into the fields of its ``video`` when nested)."""
    if not isinstance(row, Mapping):
        raise ctx.error(f"a question must be an object, got {brief(row)}", index)
    row = {**(video or {}), **row}
    video_id = ctx.text(row, "video_id", index)
    file_id = str(row.get("videoID") or video_id)
    options = ctx.options(ctx.field(row, "options", index), index)
    bucket = str(row.get("duration") or "")
    return ctx.sample(
        index,
        id=ctx.text(row, "question_id", index),
        video=ctx.video(f"{file_id}.mp4", index),
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
    **options: Unpack[LoadArgs],
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
        **options: What every loader takes (:class:`~video_env.data.LoadArgs`); here ``split``:
            ``"short"``, ``"medium"`` or ``"long"``; ``categories``: keep these task types.

    Returns:
        One sample per question (``question_id``), with a load report (see
        :class:`SampleList`).

    Raises:
        DatasetError: On a malformed file or (with ``strict``) record, or an unsafe video path.
        ConfigError: If an argument is invalid.
    """
    names = ("videomme.json", "video_mme.json", "test.json", "video_mme.jsonl")
    load = LoadOptions(video_root, **options)
    ctx = load.context(find_file(annotations, names, "Video-MME annotation"))
    records = read_records(ctx.path)
    samples = ctx.collect(records, lambda i, r: _parse_record(ctx, r, i), _ID_KEYS)
    return load.finish(NAME, samples, [ctx], DURATIONS)
