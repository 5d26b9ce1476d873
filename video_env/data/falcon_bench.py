"""FALCON-Bench loader (fields of its lmms-eval task)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from video_env.data._answers import answer_letter
from video_env.data._common import PathLike, RecordContext
from video_env.data._files import find_file, read_records
from video_env.data._parsing import brief, parse_form
from video_env.data._report import LoadArgs, LoadOptions, SampleList
from video_env.types import Interval, VideoQA

if TYPE_CHECKING:
    from typing_extensions import Unpack

NAME = "falcon-bench"
#: Option texts that only pad the option list to a fixed length.
PADDING = frozenset({"n/a", "na", ""})


def _is_padding(option: Any) -> bool:
    return option is None or (isinstance(option, str) and option.strip().lower() in PADDING)


def _options(ctx: RecordContext, raw: Any, index: int) -> tuple[str, ...]:
    if not isinstance(raw, (list, tuple)):
        raise ctx.error(f"options must be a list, got {brief(raw)}", index)
    options = list(raw)
    while options and _is_padding(options[-1]):
        options.pop()
    if not options:
        raise ctx.error(f"no options, only empty or padding ones: {brief(raw)}", index)
    return ctx.options(options, index, strip_letters=False)


def _intervals(
    ctx: RecordContext, raw: Any, duration: float | None, index: int
) -> tuple[Interval, ...]:
    if raw is None or raw == []:
        return ()
    if isinstance(raw, Sequence) and raw and isinstance(raw[0], (int, float, str)):
        return (ctx.interval(raw, duration, index),)  # a single [start, end]
    return ctx.intervals(raw, duration, index)


def _parse(
    ctx: RecordContext,
    record: Mapping[str, Any],
    index: int,
    forms: tuple[str, ...],
) -> list[VideoQA]:

    qid = ctx.text(record, "question_id", index)
    duration = ctx.duration(record.get("duration"), index)
    options = _options(ctx, ctx.field(record, "options", index), index)
    raw_index = ctx.field(record, "gt_option_idx", index)
    letter = answer_letter(ctx, options, raw_index, index, "index")
    gt_answer = record.get("gt_answer")
    open_answer = str(gt_answer or "").strip() or options[ord(letter) - ord("A")]
    dataset = str(record.get("dataset") or "")
    common: dict[str, Any] = {
        "video": ctx.video(ctx.text(record, "path", index), index),
        "question": ctx.text(record, "question", index),
        "duration": duration,
        "gt_intervals": _intervals(ctx, record.get("gt_time_interval"), duration, index),
        "category": str(record["category"]) if record.get("category") else None,
        "source": NAME,
    }

    def meta(form: str) -> dict[str, Any]:
        splits = [dataset] if dataset else []
        return {"question_id": qid, "form": form, "dataset": dataset, "splits": splits}

    return ctx.form_samples(index, qid, forms, letter, options, open_answer, meta, **common)


def load_falcon_bench(
    annotations: PathLike,
    video_root: PathLike | None = None,
    *,
    form: str = "both",
    **options: Unpack[LoadArgs],
) -> SampleList:
    """Load FALCON-Bench questions.

    The annotation file (JSON array, ``{"data": [...]}`` or JSONL; a folder is searched for
    ``FALCON-Bench.json``, ``falcon_bench.json``, ``test.json`` or ``*.jsonl`` equivalents)
    holds records with ``question_id, dataset, category, question, options, gt_option_idx,
    gt_answer, gt_time_interval [start, end], path`` and an optional ``duration``.
    Trailing ``"N/A"`` options (padding) are dropped. Each question yields an MCQ sample
    (id ``<question_id>-mcq``, answer letter) and/or an open one (id
    ``<question_id>-open``, answer ``gt_answer``), with ``meta["form"]`` telling which.
    Splits are the source datasets of the videos (``SoccerNet``, ``MovieChat-1K``,
    ``Walking_Tours``).

    Args:
        annotations: The annotation file, or a folder holding it.
        video_root: Folder the ``path`` fields are relative to; ``None`` skips the
            missing-video check.
        form: ``"mcq"``, ``"open"`` or ``"both"``.
        **options: What every loader takes (:class:`~video_env.data.LoadArgs`); here ``split``:
            keep one source dataset; ``categories``: keep these question categories.
            ``allow_absolute``: use absolute ``path`` fields as they are (else they are
            refused).

    Returns:
        One sample per question and form (``<question_id>-mcq``, ``<question_id>-open``),
        with a load report (see :class:`SampleList`).

    Raises:
        DatasetError: On a malformed file or (with ``strict``) record, or an unsafe video path.
        ConfigError: If an argument is invalid.
    """
    forms = parse_form(form)
    names = ("FALCON-Bench.json", "falcon_bench.json", "test.json", "falcon_bench.jsonl")
    load = LoadOptions(video_root, **options)
    ctx = load.context(find_file(annotations, names, "FALCON-Bench annotation"))
    samples = ctx.collect(
        read_records(ctx.path), lambda i, r: _parse(ctx, r, i, forms), ("question_id",)
    )
    return load.finish(NAME, samples, [ctx])
