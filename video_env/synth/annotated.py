"""A real video whose simulated sensors answer from its annotations.

Simulated perception answers from a :class:`SynthVideo`'s ground truth. On a dataset of
real files that world is a stand-in built from each sample's annotations (evidence
windows, answer, options), but the pixels an env shows must still be the file's: an
:class:`AnnotatedVideo` decodes every frame from the file and carries the stand-in world
beside it for the simulated backends (``world``) alone.
"""

from __future__ import annotations

import dataclasses

from video_env.provenance import SENSORS_ON_REAL
from video_env.synth.elements import Scene
from video_env.synth.vocab import SceneStyle
from video_env.synth.world import SynthVideo
from video_env.types import Interval
from video_env.video.base import FrameArray, Size, Times, VideoReader

#: The one scene of a real file's world: the annotations say nothing of what is on screen,
#: so simulated captions and CLIP describe no made-up kitchen or street.
UNANNOTATED = SceneStyle(
    "unannotated", "a scene the annotations do not describe", (0, 0, 0), (0, 0, 0)
)


def file_world(standin: SynthVideo, size: Size) -> SynthVideo:
    """A real file's stand-in world: its needles only, one undescribed scene, the file's size.

    Args:
        standin: ``standin_video(sample, duration=file's)``: the annotations as a world.
        size: The file's frame size (legibility is judged against it).
    """
    scene = Scene(Interval(0.0, standin.duration), UNANNOTATED)
    return dataclasses.replace(standin, scenes=(scene,), native_size=size)


class AnnotatedVideo:
    """A decoded file (its frames) with the synthetic world its simulated sensors read.

    Every :class:`~video_env.video.base.VideoReader` method is the file's; ``world`` is
    read only by simulated backends (``video_env.backends.simulated.model.world_of``).

    Args:
        reader: The decoded file.
        world: The stand-in world built from the sample's annotations (at least as long
            as the file: it never cuts a ground-truth interval).
    """

    def __init__(self, reader: VideoReader, world: SynthVideo) -> None:
        self.reader = reader
        self.world = world

    @property
    def name(self) -> str:
        """The file's name."""
        return self.reader.name

    @property
    def duration(self) -> float:
        """The file's duration."""
        return self.reader.duration

    @property
    def fps(self) -> float:
        """The file's frame rate."""
        return self.reader.fps

    @property
    def num_frames(self) -> int:
        """The file's frame count."""
        return self.reader.num_frames

    @property
    def size(self) -> Size:
        """The file's frame size."""
        return self.reader.size

    @property
    def fingerprint(self) -> str:
        """The file's fingerprint (cached answers are real backends': frames only).

        Simulated backends, the only readers of ``world``, are never cached.
        """
        from video_env.cache.fingerprint import video_fingerprint

        return video_fingerprint(self.reader)

    def frames(self, times: Times, size: object = None) -> FrameArray:
        """The file's frames at ``times`` (see :class:`~video_env.video.base.VideoReader`)."""
        return self.reader.frames(times, size=size)

    def close(self) -> None:
        """Close the file (the world holds no handle)."""
        self.reader.close()

    def __enter__(self) -> AnnotatedVideo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AnnotatedVideo({self.reader.name!r}, {SENSORS_ON_REAL})"
