"""The suites the pixel VLM reads: short videos of colour / material / object needles."""

import pytest

from video_env._seeding import stable_seed
from video_env.errors import ConfigError
from video_env.synth.generate import generate_video
from video_env.synth.suites import get_suite, list_suites, load_suite, suite_videos


def test_synth_visible_has_short_videos_of_two_read_needles() -> None:
    videos = suite_videos("synth-visible")
    assert len(videos) == 24
    assert all(60 <= v.duration <= 110 for v in videos)
    assert all(len(v.needles) == 2 for v in videos)
    assert {n.category for v in videos for n in v.needles} == {"visual", "object"}
    mcqs = load_suite("synth-visible", forms=["mcq"])
    assert len(mcqs) == 48
    assert all(s.options is not None and len(s.options) == 4 for s in mcqs)
    assert [s.id for s in mcqs] == [s.id for s in load_suite("synth-visible", forms=["mcq"])]
    assert mcqs[0].id == "synth-visible-000/n0/mcq"


def test_synth_glimpse_has_one_short_needle_per_video() -> None:
    videos = suite_videos("synth-glimpse")
    assert len(videos) == 48
    assert all(60 <= v.duration <= 110 and len(v.needles) == 1 for v in videos)
    lengths = [v.needles[0].intervals[0].length for v in videos]
    assert min(lengths) >= 2.0 and max(lengths) <= 4.0 + 1e-6
    assert {v.needles[0].category for v in videos} == {"visual", "object"}
    assert len(load_suite("synth-glimpse", forms=["mcq"])) == 48


def test_a_needle_length_range_must_be_positive_seconds() -> None:
    for bad in ((0.0, 3.0), (4.0, 2.0), (-1.0, 1.0)):
        with pytest.raises(ConfigError, match="needle_length"):
            generate_video("v", 1, 90.0, 1, needle_length=bad)
    short = generate_video("v", 1, 90.0, 3, needle_length=(1.0, 1.5))
    assert all(1.0 <= n.intervals[0].length <= 1.5 + 1e-6 for n in short.needles)


def test_synth_glimpse_train_is_its_world_on_other_videos() -> None:
    test, train = get_suite("synth-glimpse"), get_suite("synth-glimpse-train")
    shape = ("duration_s", "needles_per_video", "categories", "needle_length_s")
    assert [getattr(test, f) for f in shape] == [getattr(train, f) for f in shape]
    seeds = {v.seed for v in suite_videos("synth-glimpse")}
    assert len(suite_videos("synth-glimpse-train")) == 160
    assert not seeds & {v.seed for v in suite_videos("synth-glimpse-train")}


@pytest.mark.parametrize("suite", ["synth-visible", "synth-glimpse", "synth-glimpse-train"])
def test_the_suites_are_held_out_from_the_pixel_models_videos(suite: str) -> None:
    # The pixel VLM and CLIP train on ``train`` (160 videos), calibrate on ``calib``.
    pixel = {
        stable_seed("pixel-real", split, i) % 2**63
        for split in ("train", "calib", "test")
        for i in range(200)
    }
    assert not pixel & {v.seed for v in suite_videos(suite)}
    others = [s.name for s in list_suites() if s.name != suite]
    assert get_suite(suite).seed not in {get_suite(n).seed for n in others}
