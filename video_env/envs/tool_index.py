"""A Tools preset's caption index: captions of a video's consecutive clips, built once.

DVD's and LongVidSearch's agents search clip captions an offline pass wrote (FALCONEye's
agent reads its 60 s clips' captions at the start); the env builds the index when an
episode first meets a video and reports its cost apart from the episodes
(:meth:`CaptionIndex.cost_record`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from video_env.backends.base import FrameBatch
from video_env.envs.perception import Perception
from video_env.envs.spaces import clean_text
from video_env.envs.tool_frames import frame_count, frame_target, sample_times
from video_env.envs.tool_rules import FrameRule
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost
from video_env.types import Interval
from video_env.video.base import VideoReader

#: Longest text of one result (a caption, an answer, a list of clips) in an observation.
RESULT_CHARS = 8192
#: The frames of one clip's caption: 0.5 fps, 4 to 32 of them (FALCONEye's ``captioning``).
CAPTION_FRAMES = FrameRule(fps=0.5, min_frames=4, max_frames=32, max_pixels=448 * 448)


@dataclass
class CaptionIndex:
    """Captions of consecutive clips of one video, built once and searched by CLIP text.

    Attributes:
        clips: The clips, in time order (clip ``i`` is ``clips[i - 1]``).
        captions: One caption per clip.
        cost: What building it spent (reported apart from episodes).
        uses: Episodes that used it (the first built it).
    """

    clips: list[Interval]
    captions: list[str]
    cost: Cost
    uses: int = 0
    features: npt.NDArray[np.float32] | None = None

    def cost_record(self) -> dict[str, Any]:
        """The index's cost for an episode record (``built_here``: this episode built it)."""
        return {"clips": len(self.clips), "built_here": self.uses == 1, **self.cost.to_dict()}


def build_index(
    video: VideoReader, perception: Perception, clip_s: float, max_tokens: int
) -> CaptionIndex:
    """Caption each ``clip_s``-second clip of ``video`` (the last one shorter).

    Raises:
        ConfigError: Without a captioner.
    """
    captioner = perception.captioner
    if captioner is None:
        raise ConfigError("a caption index needs a captioner")
    before = perception.usage()
    n = math.ceil(video.duration / clip_s - 1e-9)
    clips = [Interval(i * clip_s, min((i + 1) * clip_s, video.duration)) for i in range(n)]
    size = frame_target(CAPTION_FRAMES, video.size)
    captions = []
    for clip in clips:
        times = sample_times(CAPTION_FRAMES, clip, frame_count(CAPTION_FRAMES, clip.length))
        text = captioner.caption(FrameBatch(video, times, size), max_tokens=max_tokens)
        captions.append(clean_text(text, RESULT_CHARS))
    return CaptionIndex(clips, captions, perception.usage() - before)
