"""Temporal localisation metrics: GToU (FALCONEye) and IoU.

Both compare the ground-truth evidence ``GT`` with one predicted window ``P``.

* ``GT`` is the *union* of the sample's ground-truth intervals, taken as a set of seconds
  (overlapping or touching intervals are merged with :func:`~video_env.types.merge_intervals`);
  ``|X|`` is the total length of a set.
* ``GToU = |GT| / |GT ∪ P|`` when ``P`` hits ``GT``, else 0; ``IoU = |GT ∩ P| / |GT ∪ P|``.
  ``P`` *hits* ``GT`` when ``|GT ∩ P| > 0``, or — when ``P`` or ``GT`` has zero length — when
  the closed sets share a point. So a window inside ``GT`` has GToU 1, windows that only touch
  at an end have GToU 0, and a point prediction inside ``GT`` has GToU 1 and IoU 0.
* A zero-length ``GT`` (point annotations only) gives 0 for any window of positive length;
  when both are zero-length, both metrics are 1 if the predicted point is a ground-truth point,
  else 0. A missing prediction (``None``) scores 0. A sample without ground-truth intervals has
  no localisation score: the functions raise, and callers should leave the sample out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, TypeAlias

from video_env.errors import ConfigError
from video_env.types import Interval, merge_intervals

__all__ = ["gtou", "iou", "union_length"]

#: An ``Interval`` or a ``(start, end)`` pair in seconds.
IntervalLike: TypeAlias = "Interval | Sequence[float]"


def union_length(intervals: Sequence[IntervalLike]) -> float:
    """Total length in seconds of the union of ``intervals`` (overlaps counted once)."""
    return sum(iv.length for iv in merge_intervals(Interval.of(iv) for iv in intervals))


class _Overlap(NamedTuple):
    """How a prediction ``P`` meets the ground truth ``GT`` (lengths in seconds)."""

    gt: float  # |GT|
    inter: float  # |GT ∩ P|
    union: float  # |GT ∪ P|
    hit: bool  # whether P hits GT (see the module docstring)


def _measure(gt: Sequence[IntervalLike], pred: IntervalLike | None) -> _Overlap | None:
    """How ``pred`` meets ``gt``; ``None`` when there is no prediction.

    Raises:
        ConfigError: If ``gt`` is empty or not a sequence of intervals.
    """
    if isinstance(gt, (Interval, str, bytes)):
        raise ConfigError(f"gt must be a sequence of intervals, got {gt!r}")
    merged = merge_intervals(Interval.of(iv) for iv in gt)
    if not merged:
        raise ConfigError("no ground-truth intervals: localisation is undefined for this sample")
    if pred is None:
        return None
    window = Interval.of(pred)
    parts = [iv.intersection(window) for iv in merged]
    inter = sum(p.length for p in parts if p is not None)
    union = sum(iv.length for iv in merge_intervals([*merged, window]))
    gt_length = sum(iv.length for iv in merged)
    degenerate = window.length == 0 or gt_length == 0
    hit = inter > 0 or (degenerate and any(p is not None for p in parts))
    return _Overlap(gt_length, inter, union, hit)


def gtou(gt: Sequence[IntervalLike], pred: IntervalLike | None) -> float:
    """Ground Truth over Union (FALCONEye): ``|GT| / |GT ∪ P|`` if ``|GT ∩ P| > 0`` else 0.

    Unlike IoU it does not punish a prediction that is tighter than the ground truth: any
    window inside ``GT`` scores 1. See the module docstring for several intervals and
    zero-length cases.

    Args:
        gt: Ground-truth intervals (``Interval`` or ``(start, end)`` pairs), at least one.
        pred: The predicted window, or ``None`` when the agent gave none.

    Returns:
        The score in ``[0, 1]``.

    Raises:
        ConfigError: If ``gt`` is empty or not a sequence of intervals.
    """
    overlap = _measure(gt, pred)
    if overlap is None or not overlap.hit:
        return 0.0
    if overlap.union == 0:
        return 1.0
    return min(overlap.gt / overlap.union, 1.0)


def iou(gt: Sequence[IntervalLike], pred: IntervalLike | None) -> float:
    """Intersection over Union: ``|GT ∩ P| / |GT ∪ P|``.

    Takes the arguments of :func:`gtou` (and raises its errors).

    Returns:
        The score in ``[0, 1]``; 1 for two equal zero-length sets (see the module docstring).
    """
    overlap = _measure(gt, pred)
    if overlap is None:
        return 0.0
    if overlap.union == 0:
        return 1.0 if overlap.hit else 0.0
    return min(overlap.inter / overlap.union, 1.0)
