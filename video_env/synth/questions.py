"""Questions of synthetic videos as :class:`~video_env.types.VideoQA` samples."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np

from video_env._seeding import stable_seed
from video_env.errors import ConfigError
from video_env.synth.elements import Needle
from video_env.synth.world import SynthVideo
from video_env.types import OPTION_LETTERS, VideoQA

Form = Literal["mcq", "open"]
FORMS: tuple[Form, ...] = ("mcq", "open")


def needle_sample(video: SynthVideo, needle: Needle, form: Form, source: str = "synth") -> VideoQA:
    """The question of one needle, as an MCQ (4 shuffled options) or an open question.

    The option order is drawn from the video's seed and the needle id, so it is stable.
    """
    if form not in FORMS:
        raise ConfigError(f"unknown question form {form!r}; known: {list(FORMS)}")
    if video.needle_for(needle.question) is not needle:
        raise ConfigError(f"needle {needle.id} does not belong to video {video.id}")
    options: tuple[str, ...] | None = None
    answer = needle.fact
    if form == "mcq":
        rng = np.random.default_rng(stable_seed(video.seed, video.id, needle.id, "options"))
        choices = [needle.fact, *needle.distractors]
        order = rng.permutation(len(choices))
        options = tuple(choices[i] for i in order)
        answer = OPTION_LETTERS[options.index(needle.fact)]
    return VideoQA(
        id=f"{video.id}/{needle.id}/{form}",
        video=video,
        question=needle.question,
        answer=answer,
        duration=video.duration,
        options=options,
        gt_intervals=needle.intervals,
        category=needle.category,
        source=source,
        meta={
            "video_id": video.id,
            "needle_id": needle.id,
            "form": form,
            "pixel_size": needle.pixel_size,
            "simulated": True,
        },
    )


def video_samples(
    video: SynthVideo, forms: Iterable[Form] = FORMS, source: str = "synth"
) -> list[VideoQA]:
    """Every needle's question in every requested form."""
    return [needle_sample(video, n, f, source) for n in video.needles for f in forms]
