"""Benchmark dataset loaders and their registry.

Each loader is ``load_<name>(annotations, video_root=None, *, missing="keep", limit=None,
split=None, categories=None, strict=False, allow_absolute=False, ...) -> SampleList`` (a
``list[VideoQA]`` carrying a load report). Loading parses annotations only: videos are
never opened, just checked for existence when a video root is given. :func:`load` looks
loaders up by name, so the command line can say ``--dataset cg-bench``.

Real annotation files have quirks, so one bad record does not refuse a file: a record
that cannot be asked (a missing field, every option empty, an answer that is no option)
is skipped and reported (:attr:`SampleList.skipped_records`, one
:class:`SkippedRecordsWarning`); one with a harmless defect (an empty option keeps its
letter as :data:`EMPTY_OPTION`) is kept and reported (:attr:`SampleList.repaired_records`).
``strict=True`` raises :class:`~video_env.errors.DatasetError` on the first bad record
instead. Video paths from the annotations must stay inside the video root: a path that
climbs out with ``..``, or an absolute one unless ``allow_absolute=True``, raises
:class:`VideoPathError` whatever ``strict`` says.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from video_env.data._common import (
    EMPTY_OPTION,
    INTERVAL_TOLERANCE,
    MissingPolicy,
    RecordIssue,
    VideoPathError,
)
from video_env.data._parsing import parse_time_range, parse_timestamp, strip_option_letters
from video_env.data._report import (
    Filters,
    LoadArgs,
    MissingVideosWarning,
    SampleList,
    SkippedRecordsWarning,
)
from video_env.data.cg_bench import load_cg_bench
from video_env.data.egoschema import load_egoschema
from video_env.data.falcon_bench import load_falcon_bench
from video_env.data.jsonl import load_jsonl, save_jsonl
from video_env.data.longvidsearch import load_longvidsearch
from video_env.data.lvbench import load_lvbench
from video_env.data.mlvu import load_mlvu
from video_env.data.nextqa import load_nextgqa, load_nextqa
from video_env.data.video_mme import load_video_mme
from video_env.errors import ConfigError, UnknownNameError

__all__ = [
    "EMPTY_OPTION",
    "INTERVAL_TOLERANCE",
    "Filters",
    "LoadArgs",
    "Loader",
    "MissingPolicy",
    "MissingVideosWarning",
    "RecordIssue",
    "SampleList",
    "SkippedRecordsWarning",
    "VideoPathError",
    "available",
    "get_loader",
    "load",
    "load_cg_bench",
    "load_egoschema",
    "load_falcon_bench",
    "load_jsonl",
    "load_longvidsearch",
    "load_lvbench",
    "load_mlvu",
    "load_nextgqa",
    "load_nextqa",
    "load_video_mme",
    "parse_time_range",
    "parse_timestamp",
    "register_loader",
    "save_jsonl",
    "strip_option_letters",
]

#: A loader: ``(annotations, video_root, **options) -> SampleList``.
Loader = Callable[..., SampleList]

_LOADERS: dict[str, Loader] = {
    "cg-bench": load_cg_bench,
    "egoschema": load_egoschema,
    "falcon-bench": load_falcon_bench,
    "jsonl": load_jsonl,
    "longvidsearch": load_longvidsearch,
    "lvbench": load_lvbench,
    "mlvu": load_mlvu,
    "nextgqa": load_nextgqa,
    "nextqa": load_nextqa,
    "video-mme": load_video_mme,
}


def _key(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def available() -> list[str]:
    """Names of the registered datasets, sorted."""
    return sorted(_LOADERS)


def get_loader(name: str) -> Loader:
    """The loader registered as ``name`` (case, ``-`` and ``_`` are ignored).

    Raises:
        UnknownNameError: If no dataset has that name; the message lists the known ones.
    """
    for known, loader in _LOADERS.items():
        if _key(known) == _key(name):
            return loader
    raise UnknownNameError("dataset", name, _LOADERS)


def load(name: str, annotations: Any, videos: Any = None, **options: Any) -> SampleList:
    """Load a registered dataset by name.

    Args:
        name: A name from :func:`available`, e.g. ``"cg-bench"``.
        annotations: The annotation file or folder.
        videos: Folder of the videos (``None``: do not check them).
        **options: The loader's keyword arguments (``missing``, ``limit``, ``split``,
            ``categories``, and loader-specific ones such as ``form``).

    Returns:
        The samples, with a load report.

    Raises:
        UnknownNameError: If the dataset is not registered.
        DatasetError: If the annotations are malformed (a bad record only with
            ``strict=True``), or a video path leaves the video root.
        ConfigError: If an option is invalid.
    """
    return get_loader(name)(annotations, videos, **options)


def register_loader(name: str, loader: Loader, *, overwrite: bool = False) -> None:
    """Register a loader under ``name`` (e.g. for a private benchmark).

    Raises:
        ConfigError: If the name is taken and ``overwrite`` is false.
    """
    taken = [known for known in _LOADERS if _key(known) == _key(name)]
    if taken and not overwrite:
        raise ConfigError(f"dataset {name!r} is already registered")
    for known in taken:
        del _LOADERS[known]
    _LOADERS[name] = loader
