"""Segments and retrieval candidates of the ClipQuery env (VideoAgent's search space)."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from video_env.actions.types import QueryAction, SegmentQuery
from video_env.errors import ConfigError, InvalidActionError
from video_env.types import Interval

#: Candidates closer than this (seconds) to a segment's ends are not strictly inside it.
EDGE_EPS = 1e-6


#: Where the initial frames lie: the released ``main.py``'s, or the centres of equal bins.
INITIAL_PLACEMENTS = ("released", "centres")


#: Default caption length per style: detailed (VideoAgent's ~74-word captions; our cap) or
#: light (FALCONEye's ``vlm_caption_max_new_tokens``).
CAPTION_TOKENS = {"detailed": 192, "light": 64}


def grid_frames(duration: float, fps: float) -> int:
    """Frames of the ``fps`` grid ``0, 1/fps, ...`` that lie inside ``[0, duration)``."""
    return max(1, math.ceil(duration * fps - 1e-9))


def released_initial_times(duration: float, n: int, fps: float) -> npt.NDArray[np.float64]:
    """VideoAgent's initial frames: ``np.linspace(1, N, n, dtype=int)`` of the ``N`` frames.

    The released ``main.py`` numbers the frames decoded at 1 fps from 1 to ``N`` and
    samples ``n`` of them with ``np.linspace`` (truncated to integers), so the first and
    the last frame are both seen and ``n - 1`` segments lie between them. Frame ``k`` is at
    ``(k - 1) / fps`` seconds; repeated frames (videos shorter than ``n`` frames) count once.
    """
    count = grid_frames(duration, fps)
    index = np.linspace(1, count, num=n, dtype=int) if n > 0 else np.zeros(0, dtype=int)
    return np.unique(index - 1).astype(np.float64) / fps


def segments_between(
    times: Sequence[float], duration: float, last_time: float | None = None
) -> list[Interval]:
    """The gaps between consecutive seen times, with the video's edges still unseen.

    Args:
        times: Seen frame times, sorted, inside ``[0, duration)``.
        duration: Video length in seconds.
        last_time: Time of the video's last frame on the retrieval grid; when the last seen
            time is that frame, no segment follows it (``None``: one always does).

    Returns:
        ``[0, t1]`` (unless ``t1`` is 0), ``[t1, t2], ..., [tn, duration]`` (unless ``tn``
        is the last frame); one segment ``[0, duration]`` when nothing was seen. Segment
        number ``k`` in observations is ``result[k - 1]``.
    """
    if not times:
        return [Interval(0.0, float(duration))]
    seen = [float(t) for t in times]
    out = [Interval(0.0, seen[0])] if seen[0] > EDGE_EPS else []
    out += [Interval(a, b) for a, b in itertools.pairwise(seen)]
    if last_time is None or seen[-1] < last_time - EDGE_EPS:
        out.append(Interval(seen[-1], float(duration)))
    return out


def candidate_times(segment: Interval, fps: float) -> npt.NDArray[np.float64]:
    """Times of the ``fps`` grid (``k / fps``) strictly inside ``segment``.

    The segment's ends are seen frames (or the video's ends), so no candidate is a seen
    time.
    """
    first = math.floor(segment.start * fps) + 1
    last = math.ceil(segment.end * fps) - 1
    if last < first:
        return np.zeros(0, dtype=np.float64)
    times = np.arange(first, last + 1, dtype=np.float64) / fps
    inside = (times > segment.start + EDGE_EPS) & (times < segment.end - EDGE_EPS)
    return times[inside]


def check_query_types(action: QueryAction) -> None:
    """Raise :class:`TypeError` unless ``action`` holds well-typed segment queries."""
    if not isinstance(action.queries, tuple):
        raise TypeError(f"QueryAction.queries must be a tuple, got {type(action.queries).__name__}")
    for query in action.queries:
        if not isinstance(query, SegmentQuery):
            raise TypeError(f"queries must be SegmentQuery, got {type(query).__name__}")
        if isinstance(query.segment, bool) or not isinstance(query.segment, (int, np.integer)):
            raise TypeError(f"segment must be an int, got {type(query.segment).__name__}")
        if not isinstance(query.text, str):
            raise TypeError(f"query text must be a str, got {type(query.text).__name__}")


def check_round(
    action: QueryAction,
    segments: Sequence[Interval],
    fps: float,
    max_queries: int,
    frames_left: int,
) -> None:
    """Raise :class:`InvalidActionError` unless the round can be run in full.

    Args:
        action: The round's queries (segment numbers refer to ``segments``, 1-based).
        segments: The segments shown before the round.
        fps: Candidate grid rate.
        max_queries: Queries allowed per round.
        frames_left: Frames the budget still allows.
    """
    n = len(action.queries)
    if n == 0:
        raise InvalidActionError("a query round needs at least one query")
    if n > max_queries:
        raise InvalidActionError(f"at most {max_queries} queries per round, got {n}")
    if n > frames_left:
        raise InvalidActionError(
            f"only {frames_left} frame(s) left in the budget; this round asks for {n}"
        )
    for query in action.queries:
        if not 1 <= query.segment <= len(segments):
            raise InvalidActionError(
                f"segment {query.segment} does not exist; segments are 1 to {len(segments)}"
            )
        if not query.text.strip():
            raise InvalidActionError(f"the query of segment {query.segment} has no description")
    for number, wanted in Counter(int(q.segment) for q in action.queries).items():
        available = len(candidate_times(segments[number - 1], fps))
        if wanted > available:
            segment = segments[number - 1]
            raise InvalidActionError(
                f"segment {number} [{segment.start:g}, {segment.end:g}] has {available} unseen "
                f"frame(s) left; {wanted} queried"
            )


def check_settings(
    initial_frames: int,
    max_rounds: int,
    max_frames: int,
    max_queries: int | None,
    max_segments: int,
) -> None:
    """Raise :class:`ConfigError` for inconsistent budgets."""
    if initial_frames < 0 or max_rounds < 0:
        raise ConfigError("initial_frames and max_rounds must be >= 0")
    if max_frames < initial_frames:
        raise ConfigError(f"max_frames={max_frames} is below initial_frames={initial_frames}")
    if max_queries is not None and max_queries < 1:
        raise ConfigError("max_queries_per_round must be >= 1")
    if max_segments < max_frames + 1:
        raise ConfigError(f"max_segments={max_segments} must be >= max_frames + 1")
