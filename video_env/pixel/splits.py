"""The pixel world's own videos: train, calib and test splits, disjoint from every suite.

The shipped pixel perceptions were trained on the ``train`` split, calibrated on ``calib``
and are evaluated on ``test`` (their held-out harness). ``video-env train ... --split``
reads questions from these videos.
"""

from __future__ import annotations

import functools

from video_env._seeding import stable_seed
from video_env.errors import ConfigError
from video_env.synth.generate import generate_video
from video_env.synth.suites import list_suites, suite_videos
from video_env.synth.world import SynthVideo

__all__ = ["READ_CATEGORIES", "READ_SUITES", "split_video", "split_videos"]

#: Categories whose facts the model is taught to read (words, numbers and clock times are
#: not: the feasibility run found them at chance even from large crops; their carriers
#: are still taught, so that retrieval finds the sign or the clock).
READ_CATEGORIES = frozenset({"visual", "object"})
#: The suites whose needles the shipped pixel VLM reads: its MCQ accuracy with the
#: evidence on screen is at least 0.3 above that on a needle-free window, on these held-out
#: videos (``python -m experiments.pacing_suite.separation --suite S --legibility
#: --policies``; docs/pixel_vlm.md). A bench of the pixel VLM on any other source is
#: labelled as outside what it reads.
READ_SUITES = ("synth-visible", "synth-glimpse")


def split_videos(
    split: str, n: int, duration: float = 300.0, n_needles: int = 8
) -> list[SynthVideo]:
    """``n`` generated videos of ``split`` (``"train"``, ``"calib"``, ``"test"``).

    Raises:
        ConfigError: If a seed collides with a suite video's seed (never expected).
    """
    return [split_video(split, i, duration, n_needles) for i in range(n)]


def split_video(split: str, index: int, duration: float = 300.0, n_needles: int = 8) -> SynthVideo:
    """Video ``index`` of ``split``, the one :func:`split_videos` makes (id ``pixel-SPLIT-I``).

    Args:
        split: ``"train"``, ``"calib"`` or ``"test"``.
        index: The video's place in its split.
        duration: Seconds.
        n_needles: Needles drawn into it.

    Raises:
        ConfigError: If its seed collides with a suite video's seed (never expected).
    """
    seed = stable_seed("pixel-real", split, index) % (2**63)
    if seed in _suite_seeds():
        raise ConfigError(f"pixel-real {split} video {index} shares a seed with a suite video")
    return generate_video(f"pixel-{split}-{index}", seed, duration, n_needles)


@functools.cache
def _suite_seeds() -> frozenset[int]:
    return frozenset(v.seed for s in list_suites() for v in suite_videos(s.name))
