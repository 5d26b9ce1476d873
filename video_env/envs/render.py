"""Rendering of an episode: thumbnails of the last frames over an exploration timeline.

The ground truth appears only here (green on the timeline), never in observations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from PIL import Image, ImageDraw

from video_env.types import Interval
from video_env.video.base import FrameArray, VideoReader
from video_env.video.resize import Resize

if TYPE_CHECKING:
    from video_env.envs.episode import EpisodeTracker

WIDTH = 960
THUMB = (160, 90)
BAR_H = 56
_EXPLORED = (70, 120, 220)
_CURRENT = (245, 150, 30)
_TRUTH = (40, 170, 70)


def render_rgb(
    episode: EpisodeTracker,
    video: VideoReader | None,
    times: np.ndarray,
    window: Interval | None,
) -> FrameArray:
    """``uint8[H, 960, 3]``: up to 6 thumbnails of the last frames and the timeline."""
    canvas = Image.new("RGB", (WIDTH, THUMB[1] + BAR_H + 16), (24, 24, 28))
    if video is not None and len(times):
        picks = times[np.linspace(0, len(times) - 1, min(6, len(times))).astype(int)]
        thumbs = video.frames(picks, size=Resize.exact(*THUMB))
        for i, thumb in enumerate(thumbs):
            canvas.paste(Image.fromarray(thumb), (i * (THUMB[0] + 2), 0))
    draw = ImageDraw.Draw(canvas)
    duration = video.duration if video is not None else 1.0
    top = THUMB[1] + 8

    def span(iv: Interval, y0: int, y1: int, colour: tuple[int, int, int]) -> None:
        x0 = round(iv.start / duration * (WIDTH - 1))
        x1 = max(x0 + 1, round(iv.end / duration * (WIDTH - 1)))
        draw.rectangle((x0, top + y0, x1, top + y1), fill=colour)

    draw.rectangle((0, top, WIDTH - 1, top + BAR_H), outline=(90, 90, 90))
    for iv, _kind in episode.explored:
        span(iv, 4, 24, _EXPLORED)
    if window is not None:
        span(window, 26, 38, _CURRENT)
    for iv in episode.sample.gt_intervals:
        span(iv, 40, BAR_H - 4, _TRUTH)
    return np.asarray(canvas)


def render_ansi(episode: EpisodeTracker, window: Interval | None, extra: list[str]) -> str:
    """A text summary of the episode so far."""
    where = f"[{window.start:.1f}, {window.end:.1f}] s" if window is not None else "-"
    lines = [
        # the turn about to be played, as the observation's ``turn`` says (1 at reset)
        f"sample {episode.sample.id}  turn {episode.turns + 1}  invalid {episode.invalid_actions}",
        f"question: {episode.sample.question}",
        f"current window: {where}",
        f"explored: {len(episode.explored)} windows",
        *extra,
    ]
    return "\n".join(lines)
