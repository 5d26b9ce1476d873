"""Properties of the simulated perception that researchers rely on, over many draws."""

from collections.abc import Callable

import numpy as np
import pytest

from video_env import BackendError, Interval, VideoQA
from video_env.backends import FrameBatch, LexicalEmbedder
from video_env.backends.simulated import (
    ABSTAIN_TEXT,
    SimulatedCaptioner,
    SimulatedCLIP,
    SimulatedVLM,
    SimVLMSettings,
)
from video_env.errors import ConfigError
from video_env.metrics.calibration import calibration_report
from video_env.synth import SynthVideo, standin_video, suite_videos, video_samples

Window = Callable[[VideoQA], Interval]


@pytest.fixture(scope="module")
def world() -> list[tuple[SynthVideo, VideoQA]]:
    videos = suite_videos("synth-hour")[:24]
    return [(v, s) for v in videos for s in video_samples(v, ["mcq", "open"])]


def accuracy(
    pairs: list[tuple[SynthVideo, VideoQA]],
    window: Window,
    n: int,
    resolution: int | tuple[int, int],
    vlm: SimulatedVLM | None = None,
    form: str | None = None,
    category: str | None = None,
) -> float:
    vlm = vlm or SimulatedVLM()
    hits = []
    for video, s in pairs:
        if (form and s.meta["form"] != form) or (category and s.category != category):
            continue
        batch = FrameBatch.sample(video, window(s), n, resolution)
        hits.append(vlm.answer(batch, s.question, s.options).text == s.answer)
    return float(np.mean(hits))


def before(s: VideoQA) -> Interval:
    start = s.gt_intervals[0].start
    return Interval(max(0.0, start - 200), max(1.0, start - 1))


def evidence(s: VideoQA) -> Interval:
    return s.gt_intervals[0]


def around(length: float) -> Window:
    def window(s: VideoQA) -> Interval:
        c = s.gt_intervals[0].center
        return Interval(max(0.0, c - length / 2), min(s.duration or c, c + length / 2))

    return window


def test_no_evidence_means_chance_for_mcq_and_near_zero_for_open(world) -> None:  # type: ignore[no-untyped-def]
    seeds = [SimulatedVLM(seed=k) for k in range(4)]
    mcq = np.mean([accuracy(world, before, 16, 448, v, form="mcq") for v in seeds])
    opn = np.mean([accuracy(world, before, 16, 448, v, form="open") for v in seeds])
    assert abs(mcq - 0.25) < 0.05
    assert opn < 0.02


def test_accuracy_rises_with_evidence_frames_and_saturates(world) -> None:  # type: ignore[no-untyped-def]
    acc = {n: accuracy(world, evidence, n, 448, form="open") for n in (1, 4, 16, 64, 256)}
    assert acc[1] + 0.2 < acc[4] < acc[16] < acc[64]
    assert acc[256] - acc[64] < 0.05  # saturation
    assert acc[256] <= 0.96


def test_resolution_matters_for_small_text_not_for_colour(world) -> None:  # type: ignore[no-untyped-def]
    text = {r: accuracy(world, evidence, 8, r, form="open", category="text") for r in (224, 1280)}
    visual = {
        r: accuracy(world, evidence, 8, r, form="open", category="visual") for r in (224, 1280)
    }
    assert text[1280] - text[224] > 0.4
    assert abs(visual[1280] - visual[224]) < 0.1


def test_zoom_in_beats_a_wide_low_resolution_window(world) -> None:  # type: ignore[no-untyped-def]
    zoomed = accuracy(world, around(5), 16, (1204, 672), form="open")
    wide = accuracy(world, around(60), 16, 448, form="open")
    assert zoomed > wide + 0.2


@pytest.mark.parametrize("error", [0.0, 0.05, 0.15, -0.05])
def test_measured_ace_matches_the_configured_calibration_error(world, error: float) -> None:  # type: ignore[no-untyped-def]
    vlm = SimulatedVLM(SimVLMSettings(calibration_error=error), seed=1)
    rng = np.random.default_rng(0)
    conf, correct = [], []
    for video, s in world:
        for _ in range(20):
            centre = s.gt_intervals[0].center + rng.uniform(-40, 40)
            centre = min(video.duration - 3, max(3.0, centre))
            half = rng.choice([2.5, 10, 30])
            window = Interval(max(0, centre - half), min(video.duration, centre + half))
            batch = FrameBatch.sample(video, window, int(rng.choice([4, 8, 16])), 448)
            answer = vlm.answer(batch, s.question, s.options)
            conf.append(answer.confidence)
            correct.append(answer.text == s.answer)
    report = calibration_report(np.array(conf), np.array(correct))
    assert abs(report.ace - abs(error)) < 0.03


def test_calls_are_deterministic_and_seeds_differ(world) -> None:  # type: ignore[no-untyped-def]
    video, s = world[1]
    batch = FrameBatch.sample(video, around(30)(s), 8, 448)
    a, b = SimulatedVLM(seed=3), SimulatedVLM(seed=3)
    assert a.answer(batch, s.question, s.options) == b.answer(batch, s.question, s.options)
    answers = {SimulatedVLM(seed=k).answer(batch, s.question).confidence for k in range(8)}
    assert len(answers) > 1
    acc = [accuracy(world, around(30), 8, 448, SimulatedVLM(seed=k)) for k in (10, 11)]
    assert abs(acc[0] - acc[1]) < 0.08


def test_answer_format_and_cost_accounting(world) -> None:  # type: ignore[no-untyped-def]
    video, s = next((v, s) for v, s in world if s.is_mcq)
    vlm = SimulatedVLM()
    answer = vlm.answer(FrameBatch.sample(video, evidence(s), 10, 448), s.question, s.options)
    assert answer.text in "ABCD"
    assert 0 <= answer.confidence <= 1
    assert answer.token_probs == (answer.confidence,)
    assert answer.n_visual_tokens == 16 * 9 * 5
    vlm.answer(FrameBatch.sample(video, evidence(s), 4, 448), s.question, s.options)
    assert vlm.usage.vlm_calls == 2
    assert vlm.usage.frames == 14
    unseen = vlm.answer(FrameBatch.sample(video, before(s), 4, 448), s.question)
    assert unseen.text == ABSTAIN_TEXT or unseen.text in video.needle_for(s.question).distractors  # type: ignore[union-attr]


def test_open_answer_token_probs_have_the_confidence_as_geometric_mean(world) -> None:  # type: ignore[no-untyped-def]
    vlm = SimulatedVLM()
    answers = [
        vlm.answer(FrameBatch.sample(video, window(s), 10, 1280), s.question)
        for video, s in world
        if not s.is_mcq
        for window in (evidence, before)
    ]
    assert any(len(a.token_probs) > 1 for a in answers)  # multi-word answers (abstentions)
    for a in answers:
        assert len(a.token_probs) == max(1, len(a.text.split()))
        geometric = float(np.exp(np.mean(np.log(a.token_probs))))
        assert geometric == pytest.approx(a.confidence)


def test_captions_are_light_and_state_facts_only_with_evidence(world) -> None:  # type: ignore[no-untyped-def]
    captioners = [SimulatedCaptioner(seed=k) for k in range(4)]
    stated = {224: 0, 1280: 0}
    without = 0
    texts = [(v, s) for v, s in world if s.category == "text" and s.meta["form"] == "open"]
    for video, s in texts:
        fact = video.needle_for(s.question).fact  # type: ignore[union-attr]
        for captioner in captioners:
            for res in stated:
                caption = captioner.caption(FrameBatch.sample(video, evidence(s), 8, res))
                assert len(caption.split()) <= 15
                stated[res] += fact in caption
            late = captioner.caption(FrameBatch.sample(video, before(s), 8, 1280))
            without += fact in late
    trials = len(texts) * len(captioners)
    assert without == 0
    assert stated[1280] > stated[224] + trials * 0.2
    assert stated[1280] < trials  # light captions miss facts sometimes
    assert captioners[0].usage.caption_calls == 3 * len(texts)


def test_detailed_captions_are_longer_and_miss_fewer_facts(world) -> None:  # type: ignore[no-untyped-def]
    captioners = [SimulatedCaptioner(seed=k) for k in range(4)]
    stated = {"light": 0, "detailed": 0}
    texts = [(v, s) for v, s in world if s.category == "text" and s.meta["form"] == "open"]
    for video, s in texts:
        fact = video.needle_for(s.question).fact  # type: ignore[union-attr]
        for captioner in captioners:
            batch = FrameBatch.sample(video, evidence(s), 1, 1280)
            for style in stated:
                caption = captioner.caption(batch, max_tokens=192, style=style)
                assert len(caption.split()) <= (15 if style == "light" else 75)
                stated[style] += fact in caption
    assert stated["detailed"] > stated["light"]
    with pytest.raises(ConfigError):
        captioners[0].caption(batch, style="verbose")


def test_clip_retrieves_needle_frames_better_than_chance(world) -> None:  # type: ignore[no-untyped-def]
    clip = SimulatedCLIP(embedder=LexicalEmbedder())
    hits, chance = [], []
    for video, s in world[::2]:
        needle = video.needle_for(s.question)
        times = np.arange(2.0, video.duration - 2, 10.0)
        sims = clip.image_features(video, times) @ clip.text_features([needle.statement])[0]  # type: ignore[union-attr]
        best = float(times[int(np.argmax(sims))])
        hits.append(needle.visible(best))  # type: ignore[union-attr]
        chance.append(np.mean([needle.visible(float(t)) for t in times]))  # type: ignore[union-attr]
    assert np.mean(hits) > 0.5
    assert np.mean(hits) > 5 * np.mean(chance)


def test_clip_features_are_cached_and_normalised(world) -> None:  # type: ignore[no-untyped-def]
    clip = SimulatedCLIP(embedder=LexicalEmbedder())
    video = world[0][0]
    a = clip.image_features(video, [10.0, 20.0, 10.0])
    assert clip.usage.frames == 2
    assert len(clip._cache) == 2
    b = clip.image_features(video, [20.0])
    assert len(clip._cache) == 2  # served from the cache...
    assert clip.usage.frames == 3  # ...but counted, so costs do not depend on history
    assert clip.usage.clip_calls == 2
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1, atol=1e-5)
    np.testing.assert_array_equal(a[1], b[0])


def test_simulated_backends_refuse_decoded_files(coded_video: str) -> None:
    from video_env import open_video

    with open_video(coded_video) as video:
        batch = FrameBatch.sample(video, Interval(0, 5), 4, 224)
        with pytest.raises(BackendError, match="standin_video"):
            SimulatedVLM().answer(batch, "What is shown?")


def test_simulated_vlm_runs_on_a_benchmark_sample_stand_in() -> None:
    sample = VideoQA(
        id="q",
        video="missing.mp4",
        question="What does the man pick up?",
        answer="B",
        duration=1800.0,
        options=("a cup", "a phone", "a book", "a key"),
        gt_intervals=((900, 920),),
    )
    world = standin_video(sample)
    vlm = SimulatedVLM()
    inside = [
        vlm.answer(
            FrameBatch.sample(world, Interval(900 + k * 0.1, 920), 8, 896),
            sample.question,
            sample.options,
        ).text
        for k in range(40)
    ]
    assert np.mean([a == "B" for a in inside]) > 0.7
