"""LVBench loader (one JSON line per video, options inside the question text)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from video_env.data._answers import answer_letter
from video_env.data._common import PathLike, RecordContext
from video_env.data._files import find_file, read_records
from video_env.data._parsing import brief, parse_time_range
from video_env.data._report import LoadArgs, LoadOptions, SampleList
from video_env.types import OPTION_LETTERS, Interval, VideoQA

if TYPE_CHECKING:
    from typing_extensions import Unpack

NAME = "lvbench"
_OPTION_MARK = re.compile(r"(?:^|(?<=\s))\(([A-Z])\)\s*")


def split_options(text: str) -> tuple[str, tuple[str, ...]] | None:
    r"""Split ``"Question?\n(A) x\n(B) y"`` into the question and its option texts.

    The options are the last run of marks ``(A)``, ``(B)``, ... in order; returns ``None``
    when the text has fewer than two.
    """
    marks = list(_OPTION_MARK.finditer(text))
    starts = [i for i, m in enumerate(marks) if m.group(1) == "A"]
    for first in reversed(starts):
        run = [marks[first]]
        for mark in marks[first + 1 :]:
            if len(run) == len(OPTION_LETTERS) or mark.group(1) != OPTION_LETTERS[len(run)]:
                break
            run.append(mark)
        if len(run) < 2:
            continue
        ends = [m.start() for m in run[1:]] + [len(text)]
        options = tuple(text[m.end() : end].strip() for m, end in zip(run, ends, strict=True))
        return text[: run[0].start()].strip(), options
    return None


def _intervals(
    ctx: RecordContext, raw: Any, duration: float | None, index: int
) -> tuple[Interval, ...]:

    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return ()
    if not isinstance(raw, str):
        raise ctx.error(f"time_reference must be 'MM:SS-MM:SS', got {brief(raw)}", index)
    pairs = []
    for part in re.split(r"[,;]", raw):
        if not part.strip():
            continue
        try:
            pairs.append(parse_time_range(part))
        except ValueError as exc:
            raise ctx.error(str(exc), index) from None
    return ctx.intervals(pairs, duration, index)


def _parse_qa(
    ctx: RecordContext,
    qa: Any,
    index: int,
    video: Mapping[str, Any],
) -> VideoQA:
    uid = ctx.text(qa, "uid", index)
    parsed = split_options(ctx.text(qa, "question", index))
    if parsed is None:
        raise ctx.error(f"question {uid}: no '(A) ... (B) ...' options in the text", index)
    question, texts = parsed
    options = ctx.options(list(texts), index, strip_letters=False)
    types = qa.get("question_type") or []
    if isinstance(types, str):
        types = [types]
    duration: float | None = video["duration"]
    return ctx.sample(
        index,
        id=uid,
        video=video["path"],
        question=question,
        answer=answer_letter(ctx, options, ctx.field(qa, "answer", index), index),
        duration=duration,
        options=options,
        gt_intervals=_intervals(ctx, qa.get("time_reference"), duration, index),
        category=str(types[0]) if types else None,
        source=NAME,
        meta={
            "video_key": video["key"],
            "video_type": video["type"],
            "categories": [str(t) for t in types],
            "time_reference": qa.get("time_reference"),
            "splits": [video["type"]] if video["type"] else [],
        },
    )


def load_lvbench(
    annotations: PathLike,
    video_root: PathLike | None = None,
    **options: Unpack[LoadArgs],
) -> SampleList:
    """Load LVBench questions.

    The annotation file (JSONL; a folder is searched for ``video_info.meta.jsonl``) has one
    line per video: ``key, type, qa: [{uid, question, answer, question_type,
    time_reference}]`` and an optional ``duration``. The options ``(A) ...(D) ...`` are cut
    out of the question text; ``time_reference`` (``MM:SS-MM:SS`` or ``H:MM:SS`` bounds,
    several separated by commas) becomes the evidence intervals. Videos are
    ``<key>.mp4``. The category is the first question type (all are in
    ``meta["categories"]``, which the category filter also matches); splits are video types
    (``cartoon``, ``documentary``, ``live``, ``selfmedia``, ``sport``, ``tv``).

    Args:
        annotations: The JSONL file, or a folder holding it.
        video_root: Folder of the videos; ``None`` skips the missing-video check.
        **options: What every loader takes (:class:`~video_env.data.LoadArgs`); here ``split``:
            keep one video type; ``categories``: keep these question types. ``strict``: raise
            on the first malformed record instead of skipping it (a malformed question skips
            that question; a malformed video line, all its questions).

    Returns:
        One sample per question of each video line, with a load report (see
        :class:`SampleList`).

    Raises:
        DatasetError: On a malformed file or (with ``strict``) record, or an unsafe video path.
        ConfigError: If an argument is invalid.
    """
    names = ("video_info.meta.jsonl", "lvbench.jsonl")
    load = LoadOptions(video_root, **options)
    ctx = load.context(find_file(annotations, names, "LVBench annotation"))

    def parse_video(index: int, record: Any) -> list[VideoQA]:
        key = ctx.text(record, "key", index)
        qas = ctx.field(record, "qa", index)
        if not isinstance(qas, Sequence) or isinstance(qas, str):
            raise ctx.error(f"'qa' must be a list, got {brief(qas)}", index)
        video = {
            "key": key,
            "type": str(record.get("type") or ""),
            "path": ctx.video(f"{key}.mp4", index),
            "duration": ctx.duration(record.get("duration"), index),
        }
        samples: list[VideoQA] = []
        for qa in qas:
            samples += ctx.attempt(index, qa, lambda i, q: _parse_qa(ctx, q, i, video), ("uid",))
        return samples

    samples = ctx.collect(read_records(ctx.path), parse_video, ("key",))
    return load.finish(NAME, samples, [ctx])
