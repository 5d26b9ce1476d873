"""Huge durations and times are refused where they enter, never generated (issue 62).

A JSONL record with ``"duration": 1e9`` used to load, and ``env.reset`` then never
returned: the stand-in's scene generation looped (at 1e308 forever, ``start + length``
being ``start``). Durations and times are now bounded by ``MAX_DURATION_S`` (a week): a
record beyond it is skipped and reported, and stand-in generation refuses it at once.
"""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from video_env.data import SkippedRecordsWarning, load
from video_env.envs import ClipQueryEnv, PacingEnv, ZoomEnv
from video_env.envs.spaces import MAX_SECONDS
from video_env.errors import ConfigError
from video_env.provenance import VideoProvenanceWarning
from video_env.synth.generate import generate_scenes, generate_video
from video_env.synth.standin import standin_video
from video_env.types import MAX_DURATION_S, Interval, SampleError, VideoQA

pytestmark = pytest.mark.filterwarnings("ignore::video_env.data.MissingVideosWarning")

HUGE = (1e9, 1e308, 10**400)
HUGE_IDS = ["1e9", "1e308", "10**400"]


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail (instead of hanging) when the block runs longer than ``seconds``."""

    def expire(*_: Any) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def record(ident: str, **fields: Any) -> dict[str, Any]:
    base = {"id": ident, "video": f"{ident}.mp4", "question": "What colour is the cup?"}
    return {**base, "options": ["red", "blue"], "answer": "A", **fields}


def test_one_constant_bounds_samples_and_the_envs_spaces() -> None:
    assert MAX_DURATION_S == MAX_SECONDS == 7 * 24 * 3600.0


@pytest.mark.parametrize("duration", [*HUGE, MAX_DURATION_S + 1], ids=[*HUGE_IDS, "week+1"])
def test_a_sample_longer_than_the_maximum_is_refused(duration: float) -> None:
    with pytest.raises(SampleError, match=r"at most 604800 s \(MAX_DURATION_S\)"):
        VideoQA(id="q", video="v.mp4", question="Q?", answer="a", duration=duration)
    with pytest.raises(SampleError, match=r"outside the longest video allowed|must be finite"):
        VideoQA(
            id="q", video="v.mp4", question="Q?", answer="a", gt_intervals=(Interval(0, duration),)
        )
    assert VideoQA(id="q", video="v.mp4", question="Q?", answer="a", duration=MAX_DURATION_S)


def test_jsonl_records_with_huge_durations_are_skipped_and_reported(tmp_path: Path) -> None:
    records = [record("ok", duration=120.0, gt_intervals=[[10, 20]])]
    records += [record(f"d{i}", duration=value) for i, value in enumerate(HUGE)]
    records += [record(f"t{i}", gt_intervals=[[0, value]]) for i, value in enumerate(HUGE)]
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with deadline(20), pytest.warns(SkippedRecordsWarning):
        samples = load("jsonl", path)
    assert [s.id for s in samples] == ["ok"]
    skipped = {issue.id: issue.message for issue in samples.skipped_records}
    assert set(skipped) == {"d0", "d1", "d2", "t0", "t1", "t2"}
    assert all(len(message) < 200 for message in skipped.values())  # 10**400 is abbreviated


@pytest.mark.parametrize("env_class", [ZoomEnv, PacingEnv, ClipQueryEnv])
def test_every_env_resets_at_once_on_a_file_with_huge_durations(
    env_class: type, tmp_path: Path
) -> None:
    path = tmp_path / "samples.jsonl"
    lines = [record("huge", duration=1e9), record("ok", duration=300.0, gt_intervals=[[10, 20]])]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    with pytest.warns(SkippedRecordsWarning):
        samples = load("jsonl", path)
    env = env_class(samples, standin_missing_videos=True)
    with deadline(20), pytest.warns(VideoProvenanceWarning, match="stand-in"):
        env.reset(seed=0)
    assert env.video.duration == 300.0


@pytest.mark.parametrize(
    "duration",
    [*HUGE, float("inf"), float("nan"), 0.0, -5.0],
    ids=[*HUGE_IDS, "inf", "nan", "0", "-5"],
)
def test_scene_generation_refuses_a_duration_it_cannot_bound(duration: float) -> None:
    with deadline(5), pytest.raises(ConfigError, match="MAX_DURATION_S"):
        generate_scenes(np.random.default_rng(0), duration)
    with deadline(5), pytest.raises(ConfigError, match="MAX_DURATION_S"):
        generate_video("v", 0, duration, n_needles=0)


def test_a_week_long_world_is_generated_quickly() -> None:
    with deadline(10):
        scenes = generate_scenes(np.random.default_rng(0), MAX_DURATION_S)
    assert scenes[-1].interval.end == MAX_DURATION_S and len(scenes) < MAX_DURATION_S / 30


@pytest.mark.parametrize("file_duration", [1e9, 1e308])
def test_a_standin_for_a_file_claiming_a_huge_duration_is_a_clear_error(
    file_duration: float,
) -> None:
    sample = VideoQA(
        id="q", video="v.mp4", question="Q?", options=("a", "b"), answer="A",
        gt_intervals=(Interval(1.0, 2.0),),
    )  # fmt: skip
    with deadline(5), pytest.raises(ConfigError, match=r"stand-in video of sample q.*604800"):
        standin_video(sample, duration=file_duration)
    last = VideoQA(
        id="e", video="v.mp4", question="Q?", answer="x", gt_intervals=(Interval(0, 604_780),)
    )
    assert standin_video(last).duration == MAX_DURATION_S  # the minute of tail is capped
