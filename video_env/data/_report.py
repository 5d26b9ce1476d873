"""What every loader does after parsing: filters, missing videos, the load report."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from video_env.data._common import MissingPolicy, PathLike, RecordContext, RecordIssue
from video_env.data._video_paths import VideoRoot
from video_env.errors import ConfigError, DatasetError
from video_env.types import VideoQA

#: How many missing paths (or skipped records) a summary warning names.
MISSING_SHOWN = 5

_MISSING_POLICIES = ("keep", "skip", "error")


class MissingVideosWarning(UserWarning):
    """Some samples point at video files that do not exist (one summary per load)."""


class SkippedRecordsWarning(UserWarning):
    """Some annotation records were malformed and skipped (one summary per load)."""


class SampleList(list[VideoQA]):
    """The samples a loader returns: a plain list with a small load report.

    Attributes:
        dataset: Registry name of the dataset.
        sources: Annotation files that were read.
        missing_videos: Video paths (unique, in order) that do not exist among the
            samples left after the split/category filters, or ``None`` when no video
            root was given and existence was not checked.
        skipped: Samples dropped because their video is missing (``missing="skip"``).
        clipped_intervals: Intervals clipped to the video duration (overshoot within
            :data:`INTERVAL_TOLERANCE`).
        skipped_records: Annotation records that could not be turned into a sample and
            were left out (never with ``strict=True``, which raises instead), over the
            whole files, before the filters.
        repaired_records: Records kept despite a harmless defect (an empty option, two
            options with one text), over the whole files.
    """

    def __init__(self, samples: Iterable[VideoQA] = (), *, dataset: str = "custom") -> None:
        super().__init__(samples)
        self.dataset = dataset
        self.sources: tuple[str, ...] = ()
        self.missing_videos: tuple[str, ...] | None = None
        self.skipped = 0
        self.clipped_intervals = 0
        self.skipped_records: tuple[RecordIssue, ...] = ()
        self.repaired_records: tuple[RecordIssue, ...] = ()


@dataclass(frozen=True)
class Filters:
    """Sample filters common to every loader.

    Args:
        limit: Keep at most this many samples (after the other filters and skipping).
        split: Keep samples whose ``meta["splits"]`` contains this name (each loader
            documents what its splits are).
        categories: Keep samples whose category, or one of ``meta["categories"]``, is
            listed.
    """

    limit: int | None = None
    split: str | None = None
    categories: Collection[str] | None = field(default=None)

    def __post_init__(self) -> None:
        if self.limit is not None and (
            isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 0
        ):
            raise ConfigError(f"limit must be a non-negative integer, got {self.limit!r}")
        if isinstance(self.categories, str):
            object.__setattr__(self, "categories", (self.categories,))


def _splits(sample: VideoQA) -> list[str]:
    return [str(s) for s in sample.meta.get("splits") or ()]


def _categories(sample: VideoQA) -> set[str]:
    names = {str(c) for c in sample.meta.get("categories") or ()}
    if sample.category is not None:
        names.add(sample.category)
    return names


def _select(
    samples: list[VideoQA], filters: Filters, dataset: str, splits: Collection[str]
) -> list[VideoQA]:
    if filters.split is not None:
        known = sorted(set(splits) | {s for sample in samples for s in _splits(sample)})
        if filters.split not in known:
            raise ConfigError(
                f"{dataset}: unknown split {filters.split!r}; known: {', '.join(known) or '(none)'}"
            )
        samples = [s for s in samples if filters.split in _splits(s)]
    if filters.categories is not None:
        wanted = set(filters.categories)
        samples = [s for s in samples if _categories(s) & wanted]
    return samples


def _check_ids(
    samples: Sequence[VideoQA], source: Path, strict: bool
) -> tuple[list[VideoQA], list[RecordIssue]]:
    """The samples without repeated ids, and the repeats (an error with ``strict``)."""
    seen: set[str] = set()
    unique: list[VideoQA] = []
    repeats: list[RecordIssue] = []
    for index, sample in enumerate(samples):
        if sample.id in seen:
            if strict:
                raise DatasetError(source, f"duplicate sample id {sample.id!r}", index)
            repeats.append(RecordIssue(str(source), None, sample.id, "duplicate sample id"))
            continue
        seen.add(sample.id)
        unique.append(sample)
    return unique, repeats


def _report_skipped(result: SampleList, dataset: str) -> None:
    issues = result.skipped_records
    if issues:
        shown = "; ".join(str(issue) for issue in issues[:MISSING_SHOWN])
        more = f" (+{len(issues) - MISSING_SHOWN} more)" if len(issues) > MISSING_SHOWN else ""
        warnings.warn(
            f"{dataset}: {len(issues)} malformed records skipped: {shown}{more}",
            SkippedRecordsWarning,
            stacklevel=_stacklevel(),
        )


def _check_videos(
    samples: list[VideoQA], limit: int | None, missing: MissingPolicy, check: bool
) -> tuple[list[VideoQA], list[VideoQA]]:
    """``(kept, missing)`` among the samples examined until ``limit`` are kept."""
    kept: list[VideoQA] = []
    absent: list[VideoQA] = []
    for sample in samples:
        if limit is not None and len(kept) >= limit:
            break
        path = sample.video_path
        if check and path is not None and not os.path.exists(path):
            absent.append(sample)
            if missing == "skip":
                continue
        kept.append(sample)
    return kept, absent


def _stacklevel() -> int:
    """Stack level of the first caller outside ``video_env.data`` (for warnings)."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith(
        "video_env.data"
    ):
        level, frame = level + 1, frame.f_back
    return level


def finalize(
    samples: list[VideoQA],
    *,
    dataset: str,
    sources: Sequence[RecordContext],
    video_root: PathLike | None,
    missing: MissingPolicy,
    filters: Filters,
    splits: Collection[str] = (),
    strict: bool = False,
) -> SampleList:
    """Check ids, filter, apply the missing-video policy and the limit, report.

    Records the loader skipped as malformed (and, without ``strict``, samples repeating an
    earlier id) are reported in :attr:`SampleList.skipped_records` and by one
    :class:`SkippedRecordsWarning`; records kept with a harmless defect in
    :attr:`SampleList.repaired_records`. Samples are examined in order until ``limit``
    are kept. Missing videos are checked
    with :func:`os.path.exists` only (never decoded), and only when ``video_root`` is
    given. Those among the examined samples are reported once, by a single
    :class:`MissingVideosWarning` (count and the first few paths) and in
    :attr:`SampleList.missing_videos`; with ``missing="error"`` a :class:`DatasetError`
    carries the same summary instead.

    Args:
        samples: Every sample parsed, in file order.
        dataset: Registry name, used in messages.
        sources: Contexts of the files read.
        video_root: Folder of the videos, or ``None`` not to check them.
        missing: ``"keep"``, ``"skip"`` or ``"error"`` for samples without a video file.
        filters: Split, category and limit filters.
        splits: Split names the dataset defines even when no sample is in them.
        strict: Raise on a repeated sample id instead of skipping the repeat.

    Raises:
        ConfigError: If ``missing`` or a filter is invalid.
        DatasetError: On duplicate ids with ``strict``, or missing videos with
            ``missing="error"``.
    """
    if missing not in _MISSING_POLICIES:
        raise ConfigError(f"missing must be one of {_MISSING_POLICIES}, got {missing!r}")
    samples, repeats = _check_ids(samples, sources[0].path if sources else Path(dataset), strict)
    selected = _select(samples, filters, dataset, splits)
    result = SampleList(dataset=dataset)
    result.sources = tuple(str(c.path) for c in sources)
    result.clipped_intervals = sum(c.clipped for c in sources)
    result.skipped_records = tuple(issue for c in sources for issue in c.skipped) + tuple(repeats)
    result.repaired_records = tuple(issue for c in sources for issue in c.repaired)
    _report_skipped(result, dataset)
    kept, absent = _check_videos(selected, filters.limit, missing, video_root is not None)
    if video_root is not None:
        paths = tuple(dict.fromkeys(s.video_path or "" for s in absent))
        result.missing_videos = paths
        if paths:
            summary = (
                f"{dataset}: {len(absent)} samples have no video under {os.fspath(video_root)} "
                f"({len(paths)} files), e.g. " + ", ".join(paths[:MISSING_SHOWN])
            )
            if missing == "error":
                raise DatasetError(result.sources[0] if result.sources else dataset, summary)
            action = "skipped" if missing == "skip" else "kept"
            warnings.warn(f"{summary}; {action}", MissingVideosWarning, stacklevel=_stacklevel())
            result.skipped = len(absent) if missing == "skip" else 0
    result.extend(kept)
    return result


class LoadArgs(TypedDict, total=False):
    """The keyword arguments every loader takes (each loader says what its splits are).

    Attributes:
        missing: ``"keep"`` (default), ``"skip"`` or ``"error"`` for samples without a
            video file.
        limit: Keep at most this many samples.
        split: Keep samples of this split.
        categories: Keep samples of these categories.
        strict: Raise on the first malformed record instead of skipping it.
        allow_absolute: Accept absolute video paths from the annotations (refused by
            default).
    """

    missing: MissingPolicy
    limit: int | None
    split: str | None
    categories: Collection[str] | None
    strict: bool
    allow_absolute: bool


@dataclass(frozen=True)
class LoadOptions:
    """The arguments every loader takes (:class:`LoadArgs`), and the steps of a load.

    A loader builds one from its video root and its :class:`LoadArgs`, parses each file
    through a :meth:`context` (whose :meth:`~RecordContext.video` keeps video paths inside
    :attr:`videos`), and hands the samples to :meth:`finish`. The defaults are written here
    once, for every loader.

    Attributes:
        video_root: Folder of the videos, or ``None`` not to check them.
        missing: ``"keep"``, ``"skip"`` or ``"error"`` for samples without a video file.
        limit: Keep at most this many samples.
        split: Keep samples of this split.
        categories: Keep samples of these categories.
        strict: Raise on the first malformed record instead of skipping it.
        allow_absolute: Accept absolute video paths from the annotations.
    """

    video_root: PathLike | None = None
    missing: MissingPolicy = "keep"
    limit: int | None = None
    split: str | None = None
    categories: Collection[str] | None = None
    strict: bool = False
    allow_absolute: bool = False

    @property
    def videos(self) -> VideoRoot:
        """The video root that keeps the annotations' video paths inside it."""
        return VideoRoot(self.video_root, self.allow_absolute)

    def filters(self) -> Filters:
        """The split, category and limit filters.

        Raises:
            ConfigError: If one is invalid.
        """
        return Filters(self.limit, self.split, self.categories)

    def context(self, path: Path) -> RecordContext:
        """An annotation file's parsing context (with :attr:`videos`; strict if the load is)."""
        return RecordContext(path, strict=self.strict, videos=self.videos)

    def finish(
        self,
        dataset: str,
        samples: list[VideoQA],
        sources: Sequence[RecordContext],
        splits: Collection[str] = (),
    ) -> SampleList:
        """:func:`finalize` the samples parsed from ``sources`` with these options."""
        return finalize(
            samples,
            dataset=dataset,
            sources=sources,
            video_root=self.video_root,
            missing=self.missing,
            filters=self.filters(),
            splits=splits,
            strict=self.strict,
        )
