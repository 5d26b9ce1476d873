import itertools

import numpy as np
import pytest

from video_env import ConfigError, Interval, UnknownNameError, VideoReader, open_video
from video_env.synth import (
    CATEGORIES,
    Needle,
    Scene,
    SynthVideo,
    export_videos,
    generate_video,
    list_suites,
    load_suite,
    needle_sample,
    standin_video,
    suite_videos,
)
from video_env.synth.vocab import SCENE_STYLES
from video_env.types import VideoQA


@pytest.fixture(scope="module")
def video() -> SynthVideo:
    return generate_video("v", seed=5, duration=900, n_needles=6)


def test_scenes_tile_the_video_with_valid_lengths(video: SynthVideo) -> None:
    assert video.scenes[0].interval.start == 0
    assert video.scenes[-1].interval.end == video.duration
    for a, b in itertools.pairwise(video.scenes):
        assert a.interval.end == b.interval.start
        assert a.style != b.style
    for scene in video.scenes:
        assert 30 - 1e-9 <= scene.interval.length <= 300 + 30


def test_needles_are_short_disjoint_and_unique(video: SynthVideo) -> None:
    assert len(video.needles) == 6
    assert {n.category for n in video.needles} == set(CATEGORIES)  # balanced round-robin
    questions = [n.question for n in video.needles]
    assert len(set(questions)) == len(questions)
    ordered = sorted(video.needles, key=lambda n: n.start)
    for a, b in itertools.pairwise(ordered):
        assert a.end + 5 <= b.start + 1e-6
    for n in video.needles:
        assert 5 <= n.end - n.start <= 60
        assert n.fact not in n.distractors
        assert len(n.distractors) == 3
        assert video.needle_for(n.question) is n


def test_generation_is_deterministic_and_seed_dependent() -> None:
    a = generate_video("v", seed=1, duration=600, n_needles=3)
    b = generate_video("v", seed=1, duration=600, n_needles=3)
    c = generate_video("v", seed=2, duration=600, n_needles=3)
    assert a.needles == b.needles
    assert a.scenes == b.scenes
    assert a.needles != c.needles
    times = [0.0, 100.0, 333.3]
    np.testing.assert_array_equal(
        a.frames(times, size=(320, 320)), b.frames(times, size=(320, 320))
    )


def test_synth_video_implements_the_reader_protocol(video: SynthVideo) -> None:
    assert isinstance(video, VideoReader)
    assert open_video(video) is video
    frames = video.frames([0.0, 10.0], size=(448, 448))
    assert frames.shape == (2, 252, 448, 3)
    assert frames.dtype == np.uint8
    assert video.frames([1.0]).shape == (1, 720, 1280, 3)
    with pytest.raises(ValueError, match="outside video"):
        video.frames([video.duration + 1])


def test_consecutive_frames_differ_and_needles_are_drawn(video: SynthVideo) -> None:
    dt = 1 / video.fps
    a, b = video.frames([100.0, 100.0 + dt], size=(448, 448)).astype(int)
    assert np.abs(a - b).mean() > 0.5  # motion: not a slideshow
    needle = video.needles[0]
    t = needle.start + 1
    with_needle = video.frames([t], size=(1280, 720))[0].astype(int)
    bare = SynthVideo(video.id, video.duration, video.scenes, [], seed=video.seed)
    without = bare.frames([t], size=(1280, 720))[0].astype(int)
    changed = np.argwhere(np.abs(with_needle - without).sum(axis=2) > 30)
    assert len(changed) > 20
    cy, cx = changed.mean(axis=0)
    assert abs(cx / 1280 - needle.position[0]) < 0.1
    assert abs(cy / 720 - needle.position[1]) < 0.1


def test_needle_for_and_content(video: SynthVideo) -> None:
    assert video.needle_for("What is the meaning of life?") is None
    needle = video.needles[0]
    assert needle.statement in video.content_at(needle.start + 0.5)
    assert needle.statement not in video.content_at(max(0.0, needle.start - 3))


def test_questions_mcq_and_open_forms(video: SynthVideo) -> None:
    needle = video.needles[0]
    mcq = needle_sample(video, needle, "mcq")
    assert mcq.options is not None
    assert len(mcq.options) == 4
    assert mcq.answer_text == needle.fact
    assert set(mcq.options) == {needle.fact, *needle.distractors}
    assert mcq.gt_intervals == needle.intervals
    assert mcq.meta["simulated"] is True
    open_q = needle_sample(video, needle, "open")
    assert open_q.options is None
    assert open_q.answer == needle.fact
    assert mcq.question == open_q.question


def test_option_shuffle_puts_answers_everywhere() -> None:
    letters = [s.answer for s in load_suite("synth-hour", forms=["mcq"])]
    counts = {letter: letters.count(letter) for letter in "ABCD"}
    assert min(counts.values()) > len(letters) / 4 * 0.6


def test_foreign_needle_and_outside_interval_are_rejected(video: SynthVideo) -> None:
    other = generate_video("w", seed=9, duration=600, n_needles=2)
    with pytest.raises(ConfigError, match="does not belong"):
        needle_sample(video, other.needles[0], "mcq")
    scene = Scene(Interval(0, 100), SCENE_STYLES[0])
    needle = other.needles[0]
    late = Needle(**{**needle.__dict__, "intervals": (Interval(90, 130),)})
    with pytest.raises(ConfigError, match="outside the video"):
        SynthVideo("x", 100, [scene], [late])
    with pytest.raises(ConfigError, match="two needles"):
        SynthVideo("x", 100, [scene], [needle, Needle(**{**needle.__dict__, "id": "dup"})])


def test_suites() -> None:
    names = [s.name for s in list_suites()]
    assert names == [
        "synth-tiny",
        "synth-quick",
        "synth-hour",
        "synth-visible",
        "synth-glimpse",
        "synth-glimpse-train",
    ]
    tiny = load_suite("synth-tiny")
    assert len(tiny) == 12
    assert all(isinstance(s, VideoQA) for s in tiny)
    assert len({s.id for s in tiny}) == len(tiny)
    quick_videos = suite_videos("synth-quick")
    assert all(600 <= v.duration <= 3600 for v in quick_videos)
    assert 20 <= len(load_suite("synth-quick")) <= 99
    hour = suite_videos("synth-hour")
    assert all(2700 <= v.duration <= 5400 for v in hour)
    assert len(load_suite("synth-hour")) >= 200
    assert [s.id for s in load_suite("synth-quick")] == [s.id for s in load_suite("synth-quick")]
    assert len(load_suite("synth-quick", forms=["open"], limit=5)) == 5


def test_unknown_suite_lists_the_known_ones() -> None:
    known = "known: synth-glimpse, synth-glimpse-train, synth-hour, synth-quick, synth-tiny"
    with pytest.raises(UnknownNameError, match=known):
        load_suite("synth-huge")


def test_standin_video_carries_a_benchmark_sample() -> None:
    sample = VideoQA(
        id="cg/1",
        video="missing.mp4",
        question="What does the man pick up?",
        answer="C",
        duration=1200.0,
        options=("a cup", "a phone", "a book", "a key"),
        gt_intervals=((100, 110), (500, 530)),
        category="object",
    )
    world = standin_video(sample)
    needle = world.needle_for(sample.question)
    assert needle is not None
    assert needle.fact == "a book"
    assert set(needle.distractors) == {"a cup", "a phone", "a key"}
    assert needle.visible(105)
    assert needle.visible(520)
    assert not needle.visible(300)
    assert world.duration == 1200
    blind = standin_video(sample.replace(gt_intervals=()))
    assert blind.needles == ()
    assert blind.needle_for(sample.question) is None


def test_export_decodes_to_the_rendered_frames(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from video_env.data import load_jsonl

    video = generate_video("exp", seed=3, duration=40, n_needles=1)
    annotations = export_videos([video], tmp_path, fps=2.0, size=(320, 180))
    samples = load_jsonl(annotations)
    assert len(samples) == 2
    assert samples[0].gt_intervals == video.needles[0].intervals
    assert samples[0].video_path is not None
    with open_video(samples[0].video_path) as decoded:
        assert decoded.num_frames == 80
        times = decoded.frame_times[::7]  # type: ignore[attr-defined]
        got = decoded.frames(times).astype(int)
    want = video.frames(times, size=(320, 180)).astype(int)
    assert np.abs(got - want).mean() < 4.0  # codec error only
    shifted = video.frames(np.clip(times + 5, 0, 40), size=(320, 180)).astype(int)
    assert np.abs(got - shifted).mean() > np.abs(got - want).mean()
