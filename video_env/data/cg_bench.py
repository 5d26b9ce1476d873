"""CG-Bench loader (clue-grounded long-video QA)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from video_env.data._answers import answer_letter
from video_env.data._common import PathLike, RecordContext
from video_env.data._files import find_file, read_json, read_records
from video_env.data._parsing import parse_form
from video_env.data._report import LoadArgs, LoadOptions, SampleList
from video_env.errors import DatasetError
from video_env.types import VideoQA

if TYPE_CHECKING:
    from typing_extensions import Unpack

NAME = "cg-bench"
META_FILE = "video_meta_info.json"


def _video_meta(path: Path | None, strict: bool) -> tuple[Mapping[str, Any], RecordContext | None]:
    if path is None or not path.is_file():
        return {}, None
    ctx = RecordContext(path, strict=strict)
    data = read_json(path)
    if not isinstance(data, Mapping):
        raise ctx.error("expected an object {video_uid: {duration, max_frame, fps}}")
    return data, ctx


def _duration(
    ctx: RecordContext, record: Mapping[str, Any], meta: Mapping[str, Any], uid: str, index: int
) -> float | None:
    duration = ctx.duration(record.get("duration"), index)
    info = meta.get(uid)
    if duration is None and isinstance(info, Mapping):
        duration = ctx.duration(info.get("duration"), index)
    return duration


def _parse(
    ctx: RecordContext,
    record: Mapping[str, Any],
    index: int,
    forms: tuple[str, ...],
    meta_info: Mapping[str, Any],
) -> list[VideoQA]:

    qid = ctx.text(record, "qid", index)
    uid = ctx.text(record, "video_uid", index)
    options = ctx.options(ctx.field(record, "choices", index), index)
    right = record.get("right_answer")
    if right not in (None, ""):
        letter = answer_letter(ctx, options, right, index, "letter")
    else:
        letter = answer_letter(ctx, options, ctx.field(record, "answer", index), index, "text")
    duration = _duration(ctx, record, meta_info, uid, index)
    domain = str(record.get("domain") or "")
    common: dict[str, Any] = {
        "video": ctx.video(f"{uid}.mp4", index),
        "question": ctx.text(record, "question", index),
        "duration": duration,
        "gt_intervals": ctx.intervals(record.get("clue_intervals"), duration, index),
        "category": str(record["sub_category"]) if record.get("sub_category") else None,
        "source": NAME,
    }
    text = str(record.get("answer") or "").strip() or options[ord(letter) - ord("A")].strip()

    def meta(form: str) -> dict[str, Any]:
        splits = [domain] if domain else []
        return {"qid": qid, "video_uid": uid, "form": form, "domain": domain, "splits": splits}

    return ctx.form_samples(index, qid, forms, letter, options, text, meta, **common)


def load_cg_bench(
    annotations: PathLike,
    video_root: PathLike | None = None,
    *,
    video_meta: PathLike | None = None,
    form: str = "mcq",
    **options: Unpack[LoadArgs],
) -> SampleList:
    """Load CG-Bench questions.

    The annotation file (a folder is searched for ``cgbench.json``, ``cg_bench.json``) is a
    JSON array of ``qid, video_uid, question, answer (text), choices (5-8), right_answer
    (letter), clue_intervals [[s, e], ...], domain, sub_category, duration``. The duration
    falls back on ``video_meta_info.json`` (``{video_uid: {duration, max_frame, fps}}``),
    looked up beside the annotations unless ``video_meta`` names it. Videos are
    ``<video_uid>.mp4``. Ids are ``<qid>-mcq`` / ``<qid>-open``; categories are
    sub-categories and splits are domains.

    Args:
        annotations: The annotation file, or a folder holding it.
        video_root: Folder of the videos; ``None`` skips the missing-video check.
        video_meta: The ``video_meta_info.json`` file, if not beside the annotations.
        form: ``"mcq"`` (default), ``"open"`` (answer text) or ``"both"``.
        **options: What every loader takes (:class:`~video_env.data.LoadArgs`); here ``split``:
            keep one domain; ``categories``: keep these sub-categories.

    Returns:
        One sample per question and form (``<qid>-mcq``, ``<qid>-open``), with a load
        report (see :class:`SampleList`).

    Raises:
        DatasetError: On a malformed file or (with ``strict``) record, or an unsafe video path.
        ConfigError: If an argument is invalid.
    """
    forms = parse_form(form)
    names = ("cgbench.json", "cg_bench.json", "cgbench_mini.json")
    load = LoadOptions(video_root, **options)
    ctx = load.context(find_file(annotations, names, "CG-Bench annotation"))
    meta_path = Path(video_meta) if video_meta is not None else ctx.path.parent / META_FILE
    meta_info, meta_ctx = _video_meta(meta_path, load.strict)
    if video_meta is not None and meta_ctx is None:
        raise DatasetError(meta_path, "video meta file not found")
    samples = ctx.collect(
        read_records(ctx.path),
        lambda i, r: _parse(ctx, r, i, forms, meta_info),
        ("qid", "video_uid"),
    )
    return load.finish(NAME, samples, [ctx] if meta_ctx is None else [ctx, meta_ctx])
