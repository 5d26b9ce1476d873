"""EgoSchema loader: ``questions.json`` joined with the public ``subset_answers.json``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from video_env.data._answers import answer_letter
from video_env.data._common import PathLike, RecordContext
from video_env.data._files import find_file, read_json, read_records
from video_env.data._parsing import brief
from video_env.data._report import LoadArgs, LoadOptions, SampleList
from video_env.types import VideoQA

if TYPE_CHECKING:
    from typing_extensions import Unpack

NAME = "egoschema"
N_OPTIONS = 5
ANSWERS_FILE = "subset_answers.json"
#: ``subset``: the questions with a public answer; ``fullset``: all of them.
SPLITS = ("subset", "fullset")


def _answers(ctx: RecordContext) -> dict[str, int]:
    """``{q_uid: option index}``; a bad entry is skipped (an error with ``strict``)."""
    data = read_json(ctx.path)
    if not isinstance(data, Mapping):
        raise ctx.error("expected an object {q_uid: option index}")
    answers: dict[str, int] = {}

    def check(index: int, entry: Mapping[str, Any]) -> tuple[()]:
        value = entry["answer"]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < N_OPTIONS:
            raise ctx.error(
                f"answer of {entry['q_uid']} must be an index 0-{N_OPTIONS - 1}, "
                f"got {brief(value)}",
                index,
            )
        answers[entry["q_uid"]] = value
        return ()

    entries = [{"q_uid": str(uid), "answer": value} for uid, value in data.items()]
    ctx.collect(entries, check, id_keys=("q_uid",))
    return answers


def _parse(
    ctx: RecordContext,
    record: Mapping[str, Any],
    index: int,
    answers: Mapping[str, int],
) -> VideoQA:

    uid = ctx.text(record, "q_uid", index)
    raw = [ctx.field(record, f"option {i}", index) for i in range(N_OPTIONS)]
    options = ctx.options(raw, index, strip_letters=False)
    answer = answers.get(uid)
    return ctx.sample(
        index,
        id=uid,
        video=ctx.video(f"{uid}.mp4", index),
        question=ctx.text(record, "question", index),
        answer=None if answer is None else answer_letter(ctx, options, answer, index, "index"),
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
    **options: Unpack[LoadArgs],
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
        **options: What every loader takes (:class:`~video_env.data.LoadArgs`); here ``split``:
            ``"subset"`` or ``"fullset"``; ``categories``: category filter (EgoSchema samples
            have none).

    Returns:
        One sample per question (``q_uid``; ``answer=None`` unless public), with a load
        report (see :class:`SampleList`).

    Raises:
        DatasetError: On a malformed file or (with ``strict``) record, an unsafe video path,
            or an ``answers`` file that does not exist.
        ConfigError: If an argument is invalid.
    """
    path = find_file(annotations, ("questions.json",), "EgoSchema questions")
    load = LoadOptions(video_root, **options)
    ctx = load.context(path)
    answers_path = Path(answers) if answers is not None else ctx.path.parent / ANSWERS_FILE
    contexts = [ctx]
    known: dict[str, int] = {}
    if answers is not None or answers_path.is_file():
        contexts.append(load.context(answers_path))
        known = _answers(contexts[-1])
    samples = ctx.collect(
        read_records(ctx.path),
        lambda i, r: _parse(ctx, r, i, known),
        id_keys=("q_uid",),
    )
    return load.finish(NAME, samples, contexts, SPLITS)
