"""What a Tools preset's frame rules and searches compute: counts, times, sizes, DPP.

Pure functions over numbers (no env state), each a rule of a released system's code:
frame counts (qwen-vl-utils' even counts, VideoZoomer's ``int(fps * length)``), sampling
(bin centres or ``np.linspace``), sizes (Qwen's ``smart_resize``, a scale-down, a box, a
short side), the visual tokens of what a policy is shown, and TimeSearch-R's greedy DPP.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from video_env.envs.tool_rules import FrameRule
from video_env.errors import InvalidActionError
from video_env.types import Interval
from video_env.video.base import Size
from video_env.video.resize import Resize
from video_env.video.sampling import qwen_visual_tokens, uniform_times


class TooManyFrames(InvalidActionError):
    """A call asked for more frames than its rule allows (``over_max == "error"``)."""

    def __init__(self, count: float, most: int) -> None:
        super().__init__(f"{count} frames asked, at most {most}")
        self.count, self.most = count, most


def frame_count(
    rule: FrameRule,
    length: float,
    n: int | None = None,
    fps: float | None = None,
    video_fps: float | None = None,
) -> int:
    """How many frames ``rule`` takes from a span of ``length`` seconds.

    ``video_fps`` is the video's frame rate, for a ``native_fps`` rule.

    Raises:
        TooManyFrames: Above ``max_frames`` when the rule refuses rather than clamps.
    """
    if n is not None:
        wanted = float(n)
    elif rule.native_fps and video_fps:
        wanted = min(length * video_fps, rule.max_frames)
    elif fps is not None or rule.fps is not None:
        wanted = (fps if fps is not None else rule.fps or 0.0) * length
    else:
        wanted = rule.n or 1
    if not wanted < rule.max_frames + 1:  # compared as a float: a huge fps is no int
        if rule.over_max == "error":
            raise TooManyFrames(int(wanted) if math.isfinite(wanted) else wanted, rule.max_frames)
        wanted = rule.max_frames
    count = int(wanted)
    count = max(count, rule.min_frames)
    if rule.even:
        count = max(2, count - count % 2)
    return count


def spread(count: int, weights: Sequence[float]) -> list[int]:
    """``count`` split over ``weights`` in proportion, summing to ``count`` exactly.

    Largest remainders get the frames rounding leaves (ties to the earlier weight), so
    several spans never take more frames than one span of their total length would;
    a span may get none. Weights that sum to 0 count alike.
    """
    total = float(sum(weights))
    exact = [count * w / total if total > 0 else count / len(weights) for w in weights]
    shares = [math.floor(x) for x in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: (shares[i] - exact[i], i))
    for i in by_remainder[: count - sum(shares)]:
        shares[i] += 1
    return shares


def sample_times(rule: FrameRule, span: Interval, count: int) -> npt.NDArray[np.float64]:
    """``count`` times in ``span``: bin centres, or ``np.linspace`` with both ends."""
    if rule.sampling == "linspace":
        return np.linspace(span.start, span.end, count, dtype=np.float64)
    return uniform_times(span, count)


def frame_target(rule: FrameRule, native: Size) -> Size:
    """The size of a frame of ``native`` size under ``rule``."""
    if rule.resize == "qwen":
        return Resize.max_pixels(rule.max_pixels, 28, rule.min_pixels).target(native)
    if rule.resize == "box" and rule.box is not None:
        width, height = rule.box
        scale = min(1.0, width / native.width, height / native.height)
    elif rule.resize == "short_side" and rule.short_side is not None:
        scale = rule.short_side / min(native.width, native.height)
    else:  # "scale": down to the budget when over it, up to the floor when under it
        pixels = native.width * native.height
        scale = 1.0
        if pixels > rule.max_pixels:
            scale = math.sqrt(rule.max_pixels / pixels)
        elif pixels < rule.min_pixels:
            scale = math.sqrt(rule.min_pixels / pixels)
    return Size(max(1, int(native.width * scale)), max(1, int(native.height * scale)))


def delivered_tokens(size: Size, count: int, as_video: bool) -> int:
    """Visual tokens a Qwen2.5-VL policy spends on ``count`` frames of ``size``.

    Images cost each ``28 x 28`` area once; a video merges frame pairs (half the tokens).
    """
    if as_video:
        return qwen_visual_tokens(size, count)
    return qwen_visual_tokens(size, 1) * count


def dpp_select(
    features: npt.NDArray[np.floating], relevance: npt.NDArray[np.floating], k: int
) -> list[int]:
    """TimeSearch-R's frame choice: greedy MAP of a query-conditioned DPP, indices sorted.

    The kernel is ``diag(r) (E Eᵀ) diag(r)`` with ``E`` the L2-normalised features and
    ``r`` the relevance min-max normalised to ``[0, 1]``; each step takes the frame of the
    largest marginal gain ``d²`` and updates the others by the Cholesky rule (Chen et al.,
    2018). With ``k`` or more frames asked, all frames are returned.
    """
    n = len(features)
    if k >= n:
        return list(range(n))
    e = np.asarray(features, dtype=np.float64)
    e = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
    r = np.asarray(relevance, dtype=np.float64)
    span = r.max() - r.min()
    r = (r - r.min()) / span if span > 0 else np.ones(n)
    kernel = (r[:, None] * (e @ e.T)) * r[None, :]
    gains = np.diag(kernel).copy()
    rows = np.zeros((k, n))
    chosen: list[int] = []
    for i in range(k):
        j = int(np.argmax(gains))
        if gains[j] <= 1e-12:  # nothing adds any more: the rest by relevance
            rest = [int(x) for x in np.argsort(-r) if int(x) not in chosen]
            chosen += rest[: k - len(chosen)]
            break
        chosen.append(j)
        update = (kernel[j] - rows[:i, j] @ rows[:i]) / math.sqrt(gains[j])
        rows[i] = update
        gains = gains - update**2
        gains[chosen] = -np.inf
    return sorted(chosen)


def candidate_times(span: Interval, grid_fps: float, most: int) -> npt.NDArray[np.float64]:
    """The times a search ranks: a ``grid_fps`` grid over ``span``, at most ``most``."""
    count = max(1, min(most, int(span.length * grid_fps)))
    return uniform_times(span, count)
