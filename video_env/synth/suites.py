"""Named, seeded suites of synthetic questions (`video-env synth list` lists them)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from video_env.errors import UnknownNameError
from video_env.synth.generate import NEEDLE_LENGTH, generate_video
from video_env.synth.questions import FORMS, Form, video_samples
from video_env.synth.vocab import CATEGORIES, Category
from video_env.synth.world import SynthVideo
from video_env.types import VideoQA


@dataclass(frozen=True)
class SuiteSpec:
    """How a suite is generated.

    Attributes:
        name: Suite name.
        description: One line for listings.
        n_videos: Number of videos.
        duration_s: Range of video lengths in seconds.
        needles_per_video: Inclusive range of needles per video.
        seed: Root seed; each video's seed derives from it.
        categories: Categories of needles.
        needle_length_s: Range of a needle's length in seconds.
    """

    name: str
    description: str
    n_videos: int
    duration_s: tuple[float, float]
    needles_per_video: tuple[int, int]
    seed: int
    categories: tuple[Category, ...] = CATEGORIES
    needle_length_s: tuple[float, float] = NEEDLE_LENGTH


#: The pacing suite, where a 4x glance misses what a 1x look reads; its world is also
#: ``synth-glimpse-train``'s (other videos, same generator).
_GLIMPSE = SuiteSpec(
    "synth-glimpse",
    "48 videos of 1-2 min, one 2-4 s colour/material/object needle each: a 1x look "
    "reads it, a 4x glance often misses it",
    48,
    (60, 110),
    (1, 1),
    seed=4848,
    categories=("visual", "object"),
    needle_length_s=(2.0, 4.0),
)

SUITES: dict[str, SuiteSpec] = {
    spec.name: spec
    for spec in (
        SuiteSpec(
            "synth-tiny",
            "3 short videos (2-4 min), for tests and CI",
            3,
            (120, 240),
            (2, 2),
            seed=11,
        ),
        SuiteSpec(
            "synth-quick",
            "8 videos of 10-60 min, tens of questions (README default)",
            8,
            (600, 3600),
            (3, 3),
            seed=22,
        ),
        SuiteSpec(
            "synth-hour",
            "40 videos of 45-90 min, hundreds of questions (FALCON-Bench-like)",
            40,
            (2700, 5400),
            (5, 5),
            seed=33,
        ),
        SuiteSpec(
            "synth-visible",
            "24 videos of 1-2 min, 2 colour/material/object needles each, legible to the "
            "pixel VLM at Pacing sizes",
            24,
            (60, 110),
            (2, 2),
            seed=4242,
            categories=("visual", "object"),
        ),
        _GLIMPSE,
        dataclasses.replace(
            _GLIMPSE,
            name="synth-glimpse-train",
            description="160 training videos of synth-glimpse's world (other seeds): train "
            "on these, bench on synth-glimpse",
            n_videos=160,
            seed=4849,
        ),
    )
}


def list_suites() -> list[SuiteSpec]:
    """Every registered suite."""
    return list(SUITES.values())


def get_suite(name: str) -> SuiteSpec:
    """The spec of a suite.

    Raises:
        UnknownNameError: Listing the known suites.
    """
    try:
        return SUITES[name]
    except KeyError:
        raise UnknownNameError("suite", name, SUITES) from None


def suite_videos(name: str) -> list[SynthVideo]:
    """The videos of a suite, generated deterministically from its seed."""
    spec = get_suite(name)
    seeds = np.random.SeedSequence(spec.seed).generate_state(spec.n_videos * 3, dtype=np.uint32)
    videos = []
    for i in range(spec.n_videos):
        rng = np.random.default_rng(int(seeds[3 * i]))
        duration = float(round(rng.uniform(*spec.duration_s)))
        n = int(rng.integers(spec.needles_per_video[0], spec.needles_per_video[1] + 1))
        video_id = f"{spec.name}-{i:03d}"
        videos.append(
            generate_video(
                video_id, int(seeds[3 * i + 1]), duration, n, spec.categories, spec.needle_length_s
            )
        )
    return videos


def load_suite(name: str, forms: Iterable[Form] = FORMS, limit: int | None = None) -> list[VideoQA]:
    """Load a suite as a list of :class:`VideoQA` samples (videos are SIMULATED).

    Args:
        name: ``synth-tiny``, ``synth-quick`` or ``synth-hour``.
        forms: Question forms to include (``"mcq"``, ``"open"``).
        limit: Keep only the first ``limit`` samples.

    Raises:
        UnknownNameError: For an unknown suite name (the message lists the known ones).
    """
    forms = tuple(forms)
    samples = [s for v in suite_videos(name) for s in video_samples(v, forms, source=name)]
    return samples[:limit] if limit is not None else samples
