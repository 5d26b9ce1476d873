"""The ``synth-visible`` suite: short videos of legible needles for Pacing under the pixel VLM."""

from video_env._seeding import stable_seed
from video_env.synth.suites import get_suite, load_suite, suite_videos


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


def test_synth_visible_is_held_out_from_the_pixel_models_videos() -> None:
    # The pixel VLM and CLIP train on ``train`` (160 videos), calibrate on ``calib``.
    pixel = {
        stable_seed("pixel-real", split, i) % 2**63
        for split in ("train", "calib", "test")
        for i in range(200)
    }
    assert not pixel & {v.seed for v in suite_videos("synth-visible")}
    assert get_suite("synth-visible").seed not in {
        get_suite(n).seed for n in ("synth-tiny", "synth-quick", "synth-hour")
    }
