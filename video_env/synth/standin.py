"""Synthetic stand-ins for benchmark samples: their ground truth as a SIMULATED video.

The simulated perception backends need only a sample's evidence windows, answer and
options. A stand-in video turns any :class:`~video_env.types.VideoQA` with ground-truth
intervals into a :class:`SynthVideo` of the same duration whose single needle carries the
sample's answer during those intervals, so search strategies can be studied on the real
distributions of video length and evidence position without the videos or a GPU.
"""

from __future__ import annotations

import numpy as np

from video_env._seeding import stable_seed
from video_env.synth.elements import Needle
from video_env.synth.generate import check_duration, generate_scenes
from video_env.synth.vocab import Category
from video_env.synth.world import SynthVideo
from video_env.types import MAX_DURATION_S, VideoQA

#: Native pixel size given to a stand-in needle when the sample says nothing.
DEFAULT_STANDIN_PIXEL_SIZE = 48.0
#: Wrong answers a stand-in offers for open questions.
OPEN_DISTRACTORS = ("something else", "nothing visible", "it cannot be determined")
#: Length given to a video of unknown duration without intervals (EgoSchema clips: 3 min).
DEFAULT_STANDIN_DURATION = 180.0
#: Length given to a video of unknown duration beyond its last interval.
_TAIL_S = 60.0


def standin_video(sample: VideoQA, seed: int = 0, duration: float | None = None) -> SynthVideo:
    """A synthetic video carrying ``sample``'s answer in its ground-truth intervals.

    A sample without ground-truth intervals gets a video with no needle at all: where the
    evidence is is unknown, so simulated perception never finds it (MCQs are then at
    chance). Unknown durations default to the last interval plus a minute, or 3 minutes.

    Args:
        sample: The sample.
        seed: Seed of the procedural scenes.
        duration: The video's duration when known from elsewhere (the file's); it wins
            over the sample's, but never cuts a ground-truth interval.

    Raises:
        ConfigError: If the duration is over :data:`~video_env.types.MAX_DURATION_S` (a
            file that says it lasts longer), before anything is generated.
    """
    known = duration or sample.duration
    if sample.gt_intervals:
        last = max(iv.end for iv in sample.gt_intervals)
        duration = max(known, last) if known else min(last + _TAIL_S, MAX_DURATION_S)
    else:
        duration = known or DEFAULT_STANDIN_DURATION
    duration = check_duration(duration, f"the stand-in video of sample {sample.id}")
    rng = np.random.default_rng(stable_seed(seed, sample.id, "standin"))
    video_id = f"standin-{sample.id}".replace("/", "_")
    scenes = generate_scenes(rng, duration)
    if not sample.gt_intervals:
        return SynthVideo(video_id, duration, scenes, [], seed=seed)
    fact = sample.answer_text if sample.answer_text is not None else "(unknown answer)"
    if sample.options is not None:
        distractors = tuple(o for o in sample.options if o != fact)
    else:
        distractors = tuple(d for d in OPEN_DISTRACTORS if d != fact)
    size = sample.meta.get("pixel_size", DEFAULT_STANDIN_PIXEL_SIZE)
    needle = Needle(
        id="gt",
        category=_category(sample.category),
        carrier="the evidence",
        fact=fact,
        distractors=distractors,
        intervals=tuple(sample.gt_intervals),
        pixel_size=float(size),
        position=(0.5, 0.4),
        question=sample.question.strip(),
        presence="something related to the question",
        statement=f"evidence that the answer is {fact}",
    )
    return SynthVideo(video_id, duration, scenes, [needle], seed=seed)


def _category(name: str | None) -> Category:
    lowered = (name or "").lower()
    keys: tuple[tuple[str, Category], ...] = (
        ("text", "text"),
        ("ocr", "text"),
        ("time", "time"),
        ("clock", "time"),
        ("colo", "visual"),
        ("visual", "visual"),
        ("attribute", "visual"),
        ("object", "object"),
    )
    for key, category in keys:
        if key in lowered:
            return category
    return "object"
