"""NExT-QA and NExT-GQA loaders (CSV questions; NExT-GQA adds grounding intervals)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from video_env.data._answers import answer_letter
from video_env.data._common import PathLike, RecordContext
from video_env.data._files import find_file, read_csv, read_json
from video_env.data._parsing import brief
from video_env.data._report import LoadArgs, LoadOptions, SampleList
from video_env.errors import DatasetError
from video_env.types import Interval, VideoQA

if TYPE_CHECKING:
    from typing_extensions import Unpack

NEXTQA = "nextqa"
NEXTGQA = "nextgqa"
N_OPTIONS = 5
MAP_FILE = "map_vid_vidorID.json"
_COLUMNS = ("question", "answer", "qid", "type", *(f"a{i}" for i in range(N_OPTIONS)))


def _read_csv(ctx: RecordContext) -> list[dict[str, str]]:
    header, rows = read_csv(ctx.path)
    absent = [c for c in _COLUMNS if c not in header]
    if "video" not in header and "video_id" not in header:
        absent.insert(0, "video")
    if absent:
        raise ctx.error(f"CSV header lacks columns {absent}")
    return rows


def _sample_id(row: Mapping[str, Any]) -> str:
    return f"{row.get('video') or row['video_id']}_{row['qid']}"


def _mapping(path: Path | None, what: str) -> tuple[dict[str, Any], RecordContext | None]:
    if path is None:
        return {}, None
    data = read_json(path)
    if not isinstance(data, Mapping):
        raise DatasetError(path, f"expected a JSON object ({what})")
    return {str(k): v for k, v in data.items()}, RecordContext(path)


def _beside(ctx: RecordContext, given: PathLike | None, default: str) -> Path | None:
    """The file named ``given``, else ``default`` beside the CSV when it exists."""
    if given is not None:
        return Path(given)
    path = ctx.path.parent / default
    return path if path.is_file() else None


def _parse(
    ctx: RecordContext,
    row: Mapping[str, str],
    index: int,
    video_map: Mapping[str, Any],
    grounding: Mapping[str, Any] | None,
) -> VideoQA:
    video = ctx.text(row, "video" if "video" in row else "video_id", index)
    qid = ctx.text(row, "qid", index)
    options = ctx.options([row.get(f"a{i}") for i in range(N_OPTIONS)], index, strip_letters=False)
    kind: Literal["index", "text"] = "index" if grounding is None else "text"
    meta: dict[str, Any] = {"video_id": video, "qid": qid, "splits": [ctx.path.stem]}
    for key in ("frame_count", "width", "height"):
        if row.get(key):
            meta[key] = int(ctx.number(row[key], key, index))
    duration: float | None = None
    intervals: tuple[Interval, ...] = ()
    if grounding is not None:
        info = grounding.get(video)
        if not isinstance(info, Mapping):
            raise ctx.error(f"video {video} has no entry in the grounding file", index)
        duration = ctx.duration(info.get("duration"), index)
        meta["fps"] = info.get("fps")
        location = info.get("location") or {}
        if not isinstance(location, Mapping):
            raise ctx.error(f"location of video {video} must be an object", index)
        intervals = ctx.intervals(location.get(qid), duration, index)
    relative = video_map.get(video, video)
    if isinstance(relative, int) and not isinstance(relative, bool):
        relative = str(relative)
    if not isinstance(relative, str):
        raise ctx.error(f"the video map gives {video} no path: {brief(relative)}", index)
    return ctx.sample(
        index,
        id=f"{video}_{qid}",
        video=ctx.video(f"{relative}.mp4", index),
        question=ctx.text(row, "question", index),
        answer=answer_letter(ctx, options, row.get("answer"), index, kind),
        duration=duration,
        options=options,
        gt_intervals=intervals,
        category=ctx.text(row, "type", index),
        source=NEXTQA if grounding is None else NEXTGQA,
        meta=meta,
    )


def _load(
    dataset: str,
    annotations: PathLike,
    video_map: PathLike | None,
    grounding: PathLike | None,
    load: LoadOptions,
) -> SampleList:
    load.filters()  # invalid filters fail before any file is read
    csv_path = find_file(annotations, ("val.csv", "test.csv", "train.csv"), "CSV")
    ctx = load.context(csv_path)
    rows = _read_csv(ctx)
    names, map_ctx = _mapping(_beside(ctx, video_map, MAP_FILE), "video id -> path")
    contexts = [ctx] + ([map_ctx] if map_ctx else [])
    located: dict[str, Any] | None = None
    if dataset == NEXTGQA:
        path = _beside(ctx, grounding, f"gsub_{ctx.path.stem}.json")
        if path is None:
            raise ctx.error(f"no grounding file gsub_{ctx.path.stem}.json beside it")
        located, _ = _mapping(path, "{video_id: {duration, fps, location}}")
        contexts.append(RecordContext(path))
    samples = ctx.collect(rows, lambda i, r: _parse(ctx, r, i, names, located), _sample_id)
    return load.finish(dataset, samples, contexts)


def load_nextqa(
    annotations: PathLike,
    video_root: PathLike | None = None,
    *,
    video_map: PathLike | None = None,
    **options: Unpack[LoadArgs],
) -> SampleList:
    """Load NExT-QA multiple-choice questions.

    ``annotations`` is a split CSV (``video, frame_count, width, height, question, answer
    (index), qid, type, a0``-``a4``) or a folder holding ``val.csv``. Ids are
    ``<video>_<qid>``; categories are the question types (``CW``, ``CH``, ``TN``, ``TC``,
    ``TP``, ``DO``, ``DL``, ``DC``); the split is the CSV's stem. Videos are
    ``<video_root>/<path>.mp4`` where ``map_vid_vidorID.json`` (beside the CSV unless
    ``video_map`` names it) maps the video id to its VidOR path, else ``<video>.mp4``.
    Durations are unknown (the CSV has frame counts, kept in ``meta``, but no fps).

    Args:
        annotations: The CSV, or its folder.
        video_root: Folder of the videos; ``None`` skips the missing-video check.
        video_map: The ``{video id: relative path}`` JSON, if not beside the CSV.
        **options: What every loader takes (:class:`~video_env.data.LoadArgs`); here ``split``:
            keep one split (CSV stem, e.g. ``"val"``); ``categories``: keep these question
            types. ``allow_absolute``: use absolute paths of the video map as they are.

    Returns:
        One sample per CSV row (``<video>_<qid>``), with a load report (see
        :class:`SampleList`).

    Raises:
        DatasetError: On a malformed file or (with ``strict``) row, or an unsafe video path.
        ConfigError: If an argument is invalid.
    """
    load = LoadOptions(video_root, **options)
    return _load(NEXTQA, annotations, video_map, None, load)


def load_nextgqa(
    annotations: PathLike,
    video_root: PathLike | None = None,
    *,
    grounding: PathLike | None = None,
    video_map: PathLike | None = None,
    **options: Unpack[LoadArgs],
) -> SampleList:
    """Load NExT-GQA grounded questions.

    Like :func:`load_nextqa`, but the CSV's video column is ``video_id`` and its
    ``answer`` is the option text; ``gsub_<split>.json`` beside the CSV (or
    ``grounding``), ``{video_id: {duration, fps, location: {qid: [[s, e], ...]}}}``, gives
    the duration (whole seconds, as annotated) and the evidence intervals; intervals
    overshooting the duration by up to 1 s are clipped to it. A question absent from
    ``location`` has no interval; a video absent from the file is an error.

    Args:
        annotations: The CSV, or its folder.
        video_root: Folder of the videos; ``None`` skips the missing-video check.
        grounding: The ``gsub_*.json`` file, if not beside the CSV.
        video_map: The ``{video id: relative path}`` JSON, if not beside the CSV.
        **options: What every loader takes (:class:`~video_env.data.LoadArgs`); here ``split``:
            keep one split (CSV stem, e.g. ``"val"``); ``categories``: keep these question
            types. ``allow_absolute``: use absolute paths of the video map as they are.

    Returns:
        One sample per CSV row, with its evidence intervals, and a load report (see
        :class:`SampleList`).

    Raises:
        DatasetError: On a malformed file or (with ``strict``) row, or an unsafe video path.
        ConfigError: If an argument is invalid.
    """
    load = LoadOptions(video_root, **options)
    return _load(NEXTGQA, annotations, video_map, grounding, load)
