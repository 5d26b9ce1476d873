"""EgoSchema loader: ``questions.json`` joined with the public ``subset_answers.json``."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from video_env.data._common import (
    MissingPolicy,
    PathLike,
    RecordContext,
    find_file,
    letter_of,
    read_json,
    read_records,
    video_path,
)
from video_env.data._report import Filters, SampleList, finalize
from video_env.types import VideoQA

NAME = "egoschema"
N_OPTIONS = 5
ANSWERS_FILE = "subset_answers.json"
#: ``subset``: the questions with a public answer; ``fullset``: all of them.
SPLITS = ("subset", "fullset")


def _answers(ctx: RecordContext) -> dict[str, int]:
    data = read_json(ctx.path)
    if not isinstance(data, Mapping):
        raise ctx.error("expected an object {q_uid: option index}")
    answers = {}
    for index, (uid, value) in enumerate(data.items()):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < N_OPTIONS:
            raise ctx.error(
                f"answer of {uid} must be an index 0-{N_OPTIONS - 1}, got {value!r}", index
            )
        answers[str(uid)] = value
    return answers


def _parse(
    ctx: RecordContext,
    record: Mapping[str, Any],
    index: int,
    video_root: PathLike | None,
    answers: Mapping[str, int],
) -> VideoQA:
    uid = ctx.text(record, "q_uid", index)
    options = tuple(ctx.text(record, f"option {i}", index) for i in range(N_OPTIONS))
    answer = answers.get(uid)
    return ctx.sample(
        index,
        id=uid,
        video=video_path(video_root, f"{uid}.mp4"),
        question=ctx.text(record, "question", index),
        answer=letter_of(answer) if answer is not None else None,
        options=options,
        source=NAME,
        meta={
            "google_drive_id": record.get("google_drive_id"),
            "splits": list(SPLITS) if answer is not None else ["fullset"],
        },
    )


def load_egoschema(
    annotations: PathLike,
    video_root: PathLike | None = None,
    *,
    answers: PathLike | None = None,
    missing: MissingPolicy = "keep",
    limit: int | None = None,
    split: str | None = None,
    categories: Collection[str] | None = None,
) -> SampleList:
    """Load EgoSchema questions.

    ``annotations`` is ``questions.json`` (``q_uid, google_drive_id, question, option 0``
    ... ``option 4``) or the folder holding it. Answers come from ``subset_answers.json``
    (``{q_uid: index}``) beside it unless ``answers`` names another file; questions
    without a public answer get ``answer=None`` (excluded from accuracy, never counted
    wrong). Videos are ``<q_uid>.mp4``; durations (3-minute clips) are not in the files
    and stay unknown. Splits: ``subset`` (answer known) and ``fullset`` (all).
    EgoSchema has no categories, so a category filter keeps nothing.

    Args:
        annotations: ``questions.json``, or its folder.
        video_root: Folder of the videos; ``None`` skips the missing-video check.
        answers: The answer file, if not ``subset_answers.json`` beside the questions.
        missing: ``"keep"``, ``"skip"`` or ``"error"`` for samples without a video file.
        limit: Keep at most this many samples.
        split: ``"subset"`` or ``"fullset"``.
        categories: Category filter (EgoSchema samples have none).

    Returns:
        The samples, with a load report (see :class:`SampleList`).

    Raises:
        DatasetError: If a file or record is malformed, or ``answers`` does not exist.
        ConfigError: If an argument is invalid.
    """
    ctx = RecordContext(find_file(annotations, ("questions.json",), "EgoSchema questions"))
    answers_path = Path(answers) if answers is not None else ctx.path.parent / ANSWERS_FILE
    contexts = [ctx]
    known: dict[str, int] = {}
    if answers is not None or answers_path.is_file():
        contexts.append(RecordContext(answers_path))
        known = _answers(contexts[-1])
    records = read_records(ctx.path)
    samples = [_parse(ctx, r, i, video_root, known) for i, r in enumerate(records)]
    return finalize(
        samples,
        dataset=NAME,
        sources=contexts,
        video_root=video_root,
        missing=missing,
        filters=Filters(limit, split, categories),
        splits=SPLITS,
    )
