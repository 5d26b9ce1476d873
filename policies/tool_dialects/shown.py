"""What the Tools env showed a dialect policy since its last reply, frames included.

The Tools env's pixel observation holds the frames of its latest frame-carrying result
(``frames``, cropped by ``frame_sizes``) and every result's stamps (``results[i]["times"]``).
:func:`result_frames` turns them into one :class:`FrameBatch` per frame, so a chat can put
each frame as an image after its system's label; :class:`Shown` bundles what a dialect
renders a user turn from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from policies.observed_frames import ObservedFrames
from video_env.actions.types import ToolCall
from video_env.backends.base import FrameBatch
from video_env.envs.tool_rules import ToolPreset
from video_env.errors import ConfigError

__all__ = ["Shown", "frame_numbers", "pool_indices", "question_text", "result_frames"]


@dataclass(frozen=True)
class Shown:
    """A turn's input to a dialect.

    Attributes:
        observation: The Tools observation.
        info: The step's ``info`` (``video_fps``, ``frame_pool``).
        preset: The preset the policy plays.
        result: The newest tool result not shown to the model yet (``None``: none).
        frames: That result's frames, one single-frame batch each (empty: none).
        error: The env's message about the model's last reply (empty: it was valid).
        call: The model's last call that parsed (``None``: none yet).
    """

    observation: dict[str, Any]
    info: dict[str, Any]
    preset: ToolPreset
    result: dict[str, Any] | None
    frames: list[FrameBatch]
    error: str
    call: ToolCall | None

    @property
    def times(self) -> list[float]:
        """The shown frames' timestamps in seconds."""
        return [float(batch.times[0]) for batch in self.frames]

    @property
    def turns_left(self) -> int:
        """Turns the episode has left (1: the next reply is the last)."""
        return int(self.observation["turns_left"][0])

    @property
    def duration(self) -> float:
        """The video's length in seconds."""
        return float(self.observation["duration"][0])

    def video(self) -> FrameBatch | None:
        """The shown frames as one batch (a video to backends), ``None`` when there are none."""
        if not self.frames:
            return None
        reader = self.frames[0].video
        times = np.array(self.times, dtype=np.float64)
        return FrameBatch(reader, times, self.frames[0].size)


def result_frames(observation: dict[str, Any], result: dict[str, Any] | None) -> list[FrameBatch]:
    """``result``'s frames from a pixel observation, one single-frame batch each.

    Only the latest frame-carrying result has its pixels in the observation; an older one
    (or one without frames) gives none.

    Raises:
        ConfigError: If the observation has no frames (``pixel_observations=False``).
    """
    if result is None or int(result["n_frames"][0]) == 0:
        return []
    if "frames" not in observation:
        raise ConfigError("a dialect VLM policy needs the Tools env's pixel_observations=True")
    carrying = [r for r in observation["results"] if int(r["n_frames"][0])]
    if carrying[-1] is not result:  # an older result: its pixels are gone
        return []
    n = int(result["n_frames"][0])
    width, height = (int(v) for v in observation["frame_sizes"][0])
    pixels = np.ascontiguousarray(np.asarray(observation["frames"])[:n, :height, :width])
    times = np.asarray(result["times"][:n], dtype=np.float64)
    reader = ObservedFrames(pixels, times)
    return [
        FrameBatch(reader, times[i : i + 1], reader.size, [pixels[i : i + 1]]) for i in range(n)
    ]


def question_text(observation: dict[str, Any]) -> str:
    """The question, then its options' lines (``A. ...``) when it has some."""
    options = str(observation["options"]).strip()
    question = str(observation["question"])
    return f"{question}\n{options}" if options else question


def frame_numbers(times: list[float], info: dict[str, Any]) -> list[int]:
    """Native frame numbers of ``times`` (FrameThinker's index space), from ``video_fps``.

    Raises:
        ConfigError: If ``info`` has no ``video_fps`` (not a Tools env's info).
    """
    fps = info.get("video_fps")
    if not fps:
        raise ConfigError("FrameThinker's frame numbers need info['video_fps'] (the Tools env)")
    return [round(t * float(fps)) for t in times]


def pool_indices(times: list[float], info: dict[str, Any]) -> list[int]:
    """Indices in Video-MTR's frame pool of ``times`` (the nearest pool frame).

    Raises:
        ConfigError: If ``info`` has no ``frame_pool`` (not the video-mtr preset).
    """
    pool = np.asarray(info.get("frame_pool") or (), dtype=np.float64)
    if not len(pool):
        raise ConfigError("Video-MTR's frame indices need info['frame_pool'] (video-mtr preset)")
    return [int(np.abs(pool - t).argmin()) for t in times]
