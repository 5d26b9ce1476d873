"""LongVidSearch loader: multi-hop open questions whose evidence is a set of ~30 s clips.

The released annotations (yrywill/LongVidSearch at 4aa5620) come in two forms:
``full-QA(3000).json``, a JSON array whose records name their video (``vid``, read by
``main.py:L441,L575``), and ``dataset/<vid>_qa.json``, one array per video whose records
leave the video to the file name. A record holds ``question``, ``answer`` (free text),
``category``, ``hop_level`` (``"2-Hop"``...), ``evidence_slices`` (the 1-based numbers of the
evidence clips) and ``reasoning_chain``. Clips are the video's scenes of about 30 seconds
(``main.py:L231``), stored as ``<vid>-Scene-<NNN>.mp4``
(``data_generation/step6_video_verification.py:L25-35``), so clip ``k`` is taken as the
window ``[30 (k - 1), 30 k]`` s. Videos are ``<vid>.mp4``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from video_env.data._common import PathLike, RecordContext
from video_env.data._files import read_records
from video_env.data._parsing import brief
from video_env.data._report import LoadArgs, LoadOptions, SampleList
from video_env.errors import DatasetError
from video_env.types import Interval, VideoQA

if TYPE_CHECKING:
    from typing_extensions import Unpack

NAME = "longvidsearch"
#: The length of one clip ("each clip is approximately 30 seconds", main.py:L231).
CLIP_S = 30.0
#: The per-video files' suffix (``dataset/<vid>_qa.json``).
PER_VIDEO_SUFFIX = "_qa.json"
#: The file holding every question.
FULL_FILE = "full-QA(3000).json"


def clip_window(clip: int) -> Interval:
    """The window of 1-based clip ``clip``: ``[30 (clip - 1), 30 clip]`` seconds."""
    return Interval(CLIP_S * (clip - 1), CLIP_S * clip)


def _clips(ctx: RecordContext, raw: Any, index: int) -> tuple[int, ...]:
    if not isinstance(raw, Sequence) or isinstance(raw, str) or not raw:
        raise ctx.error(f"evidence_slices must be a list of clip numbers, got {brief(raw)}", index)
    clips = []
    for value in raw:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ctx.error(f"a clip number is an integer >= 1, got {brief(value)}", index)
        clips.append(value)
    return tuple(sorted(set(clips)))


def _parse(ctx: RecordContext, record: Mapping[str, Any], index: int, vid: str | None) -> VideoQA:
    video_id = ctx.text(record, "vid", index) if vid is None else vid
    clips = _clips(ctx, ctx.field(record, "evidence_slices", index), index)
    hops = record.get("hop_level")
    return ctx.sample(
        index,
        id=f"{video_id}/{index}",
        video=ctx.video(f"{video_id}.mp4", index),
        question=ctx.text(record, "question", index),
        answer=ctx.text(record, "answer", index),
        gt_intervals=tuple(clip_window(k) for k in clips),
        category=record.get("category") if isinstance(record.get("category"), str) else None,
        source=NAME,
        meta={
            "vid": video_id,
            "evidence_clips": list(clips),
            "hop_level": hops if isinstance(hops, str) else None,
            "reasoning_chain": record.get("reasoning_chain"),
        },
    )


def _parse_at(ctx: RecordContext, vid: str | None, index: int, record: Any) -> VideoQA:
    return _parse(ctx, record, index, vid)


def _files(annotations: PathLike) -> list[tuple[Path, str | None]]:
    """The annotation files and the video each names (``None``: its records do)."""
    path = Path(annotations)
    if path.is_file():
        name = path.name
        vid = name[: -len(PER_VIDEO_SUFFIX)] if name.endswith(PER_VIDEO_SUFFIX) else None
        return [(path, vid)]
    if not path.is_dir():
        raise DatasetError(path, "file not found")
    if (path / FULL_FILE).is_file():
        return [(path / FULL_FILE, None)]
    folder = path / "dataset" if (path / "dataset").is_dir() else path
    found = sorted(folder.glob(f"*{PER_VIDEO_SUFFIX}"))
    if not found:
        raise DatasetError(path, f"no {FULL_FILE} or *{PER_VIDEO_SUFFIX} files in this folder")
    return [(f, f.name[: -len(PER_VIDEO_SUFFIX)]) for f in found]


def load_longvidsearch(
    annotations: PathLike,
    video_root: PathLike | None = None,
    **options: Unpack[LoadArgs],
) -> SampleList:
    """Load LongVidSearch questions with their evidence clips as evidence windows.

    ``annotations`` is ``full-QA(3000).json`` (records with ``vid``), one
    ``<vid>_qa.json`` file, or a folder holding either (the repository's root, its
    ``dataset/`` folder). Answers are free text (open questions, judged); each
    ``evidence_slices`` clip ``k`` becomes the ground-truth window ``[30 (k - 1), 30 k]`` s
    (the clips are ~30 s scenes); the clip numbers stay in ``meta["evidence_clips"]``.
    Categories are the record's (``State_Mutation``, ``Visual_Tracking``,
    ``Causal_Inference``, ``Global_Summary``). Ids are ``<vid>/<index in its file>``.

    Args:
        annotations: The annotation file, or a folder holding them.
        video_root: Folder of the ``<vid>.mp4`` videos; ``None`` skips the missing-video check.
        **options: What every loader takes (:class:`~video_env.data.LoadArgs`).

    Returns:
        One sample per question, with a load report (see :class:`SampleList`).

    Raises:
        DatasetError: On a missing or malformed file or (with ``strict``) record.
        ConfigError: If an argument is invalid.
    """
    load = LoadOptions(video_root, **options)
    contexts = []
    samples: list[VideoQA] = []
    for path, vid in _files(annotations):
        ctx = load.context(path)
        contexts.append(ctx)
        samples += ctx.collect(read_records(path), partial(_parse_at, ctx, vid), ("vid",))
    return load.finish(NAME, samples, contexts)


def evidence_recall(clips: Sequence[int], gold: Sequence[int]) -> float:
    """The share of the gold evidence clips among ``clips`` (the answer's evidence ids).

    LongVidSearch's metric beside accuracy: the released code logs gold and sampled clips
    (its F1 is commented out, ``tools.py:L399-417``); video-env reports this recall and,
    as the README's cost, the tool calls of the episode (``info["episode"]["tool_calls"]``).
    """
    wanted = set(gold)
    return len(wanted & set(clips)) / len(wanted) if wanted else 0.0
