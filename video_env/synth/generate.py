"""Procedural generation of synthetic needle videos and their questions."""

from __future__ import annotations

import math
import numbers
import reprlib
from collections.abc import Sequence

import numpy as np

from video_env.errors import ConfigError
from video_env.synth.elements import Needle, Scene
from video_env.synth.vocab import (
    CARRIERS,
    CATEGORIES,
    FACT_POOLS,
    PIXEL_SIZE_RANGE,
    SCENE_STYLES,
    Carrier,
    Category,
)
from video_env.synth.world import SynthVideo
from video_env.types import MAX_DURATION_S, Interval

#: Scene lengths in seconds.
SCENE_LENGTH = (30.0, 300.0)
#: Needle lengths in seconds.
NEEDLE_LENGTH = (5.0, 60.0)
#: Distractors per needle (MCQs get 4 options).
N_DISTRACTORS = 3


def check_duration(duration: float, what: str = "a synthetic video") -> float:
    """``duration`` as a float when it is in ``(0, MAX_DURATION_S]``.

    Generation time and memory grow with the duration (a scene per 30 s - 5 min), so
    it is bounded like every sample's (:data:`~video_env.types.MAX_DURATION_S`).

    Raises:
        ConfigError: Naming ``what`` and the bound.
    """
    if isinstance(duration, bool) or not isinstance(duration, numbers.Real):
        raise ConfigError(f"the duration of {what} must be a number, got {duration!r}")
    if not 0 < duration <= MAX_DURATION_S:  # NaN fails too; compared exactly
        raise ConfigError(
            f"the duration of {what} must be > 0 and at most {MAX_DURATION_S:g} s "
            f"(MAX_DURATION_S), got {reprlib.repr(duration)}"
        )
    return float(duration)


def generate_scenes(rng: np.random.Generator, duration: float) -> list[Scene]:
    """Scenes of 30 s - 5 min tiling ``[0, duration]``; consecutive styles differ.

    Raises:
        ConfigError: If ``duration`` is not in ``(0, MAX_DURATION_S]`` (see
            :func:`check_duration`): at most ``MAX_DURATION_S / 30`` scenes are made.
    """
    duration = check_duration(duration)
    lo, hi = SCENE_LENGTH
    scenes: list[Scene] = []
    start, previous = 0.0, -1
    while start < duration - 1e-9:
        length = float(rng.uniform(lo, hi))
        end = min(duration, start + length)
        if duration - end < lo:  # never leave a stub shorter than a scene
            end = duration
        choices = [i for i in range(len(SCENE_STYLES)) if i != previous]
        previous = int(rng.choice(choices))
        scenes.append(Scene(Interval(start, end), SCENE_STYLES[previous]))
        start = end
    return scenes


def _needle_slots(
    rng: np.random.Generator,
    duration: float,
    n: int,
    gap: float = 5.0,
    length_range: tuple[float, float] = NEEDLE_LENGTH,
) -> list[Interval]:
    """``n`` disjoint needle intervals (``length_range`` s, log-uniform), ``gap`` s apart."""
    lo, hi = length_range
    hi = min(hi, max(lo, duration / max(1, 2 * n) - gap))
    lengths = np.exp(rng.uniform(math.log(lo), math.log(hi), size=n))
    free = duration - lengths.sum() - gap * (n + 1)
    if free < 0:
        raise ConfigError(f"{n} needles do not fit in a {duration:.0f} s video")
    cuts = np.sort(rng.uniform(0, free, size=n))
    slots, cursor = [], gap
    for length, cut, previous in zip(
        lengths, cuts, np.concatenate([[0.0], cuts[:-1]]), strict=True
    ):
        cursor += cut - previous
        slots.append(Interval(round(cursor, 2), round(cursor + length, 2)))
        cursor += length + gap
    return slots


def _pick_carriers(
    rng: np.random.Generator, n: int, categories: Sequence[Category]
) -> list[Carrier]:
    """``n`` distinct carriers, categories balanced round-robin in a shuffled order."""
    order = [categories[i] for i in rng.permutation(len(categories))]
    pools = {c: [k for k in CARRIERS if k.category == c] for c in categories}
    for pool in pools.values():
        rng.shuffle(pool)
    chosen: list[Carrier] = []
    k = 0
    while len(chosen) < n:
        if not any(pools.values()):
            raise ConfigError(f"at most {len(chosen)} distinct needles fit in one video")
        pool = pools[order[k % len(order)]]
        if pool:
            chosen.append(pool.pop())
        k += 1
    return chosen


def make_needle(
    rng: np.random.Generator, index: int, carrier: Carrier, interval: Interval
) -> Needle:
    """A needle on ``carrier`` during ``interval`` with a random fact and distractors."""
    pool = FACT_POOLS[carrier.facts]
    picks = rng.choice(len(pool), size=1 + N_DISTRACTORS, replace=False)
    fact, distractors = pool[picks[0]], tuple(pool[i] for i in picks[1:])
    lo, hi = PIXEL_SIZE_RANGE[carrier.category]
    pixel_size = float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
    style = ""
    if carrier.category == "time":
        style = "digital" if "oven" in carrier.name else "analog"
    return Needle(
        id=f"n{index}",
        category=carrier.category,
        carrier=carrier.name,
        fact=fact,
        distractors=distractors,
        intervals=(interval,),
        pixel_size=round(pixel_size, 1),
        position=(float(rng.uniform(0.2, 0.8)), float(rng.uniform(0.2, 0.6))),
        question=carrier.question.format(carrier=carrier.name),
        presence=carrier.presence,
        statement=carrier.template.format(fact=fact),
        style=style,
    )


def generate_video(
    video_id: str,
    seed: int,
    duration: float,
    n_needles: int,
    categories: Sequence[Category] = CATEGORIES,
    needle_length: tuple[float, float] = NEEDLE_LENGTH,
) -> SynthVideo:
    """Generate a synthetic needle video deterministically from ``seed``.

    Args:
        video_id: Id of the video.
        seed: Everything (scenes, needle times, facts, sizes) follows from it.
        duration: Length in seconds.
        n_needles: Number of needles; each answers its own question.
        categories: Categories to draw needles from (balanced).
        needle_length: Range of a needle's length in seconds (log-uniform; capped at the
            video's share of its needles).

    Raises:
        ConfigError: If the needles do not fit or the categories are unknown.
    """
    unknown = set(categories) - set(CATEGORIES)
    if unknown or not categories:
        raise ConfigError(f"unknown categories {sorted(unknown)}; known: {list(CATEGORIES)}")
    rng = np.random.default_rng(seed)
    scenes = generate_scenes(rng, duration)
    if not 0 < needle_length[0] <= needle_length[1]:
        raise ConfigError(f"needle_length {needle_length} is not a range of positive seconds")
    slots = _needle_slots(rng, duration, n_needles, length_range=needle_length) if n_needles else []
    carriers = _pick_carriers(rng, n_needles, categories)
    needles = [
        make_needle(rng, i, c, s) for i, (c, s) in enumerate(zip(carriers, slots, strict=True))
    ]
    return SynthVideo(video_id, duration, scenes, needles, seed=seed)
