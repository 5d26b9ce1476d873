"""The frame teacher: privileged pacing, but reasoning and notes about the frames shown only."""

import json
import re
from pathlib import Path

import pytest

from experiments.videoscout_pixel.frame_teacher import FrameScriptedTeacher, describe
from policies.episode_settings import EpisodeSettings
from policies.training.cli import RULES, split_samples
from policies.training.distill import DistillConfig, distill, load_reference_chunks
from policies.videoscout.prompt import PromptLayout
from video_env.backends.base import FrameBatch
from video_env.errors import ConfigError
from video_env.pixel.splits import READ_CATEGORIES, split_videos
from video_env.synth.suites import load_suite
from video_env.synth.world import SynthVideo
from video_env.types import Interval, VideoQA

SMOKE = RULES["cpu-smoke"]()


def test_split_samples_are_the_read_questions_of_that_split_in_both_forms() -> None:
    samples = split_samples("calib", 2)
    videos = split_videos("calib", 2)
    read = [n for v in videos for n in v.needles if n.category in READ_CATEGORIES]
    assert len(samples) == 2 * len(read) > 0
    assert {s.meta["form"] for s in samples} == {"mcq", "open"}
    assert {s.video.id for s in samples} == {v.id for v in videos}  # type: ignore[union-attr]
    assert [s.id for s in split_samples("calib", 2, limit=3)] == [s.id for s in samples[:3]]


def test_describe_names_the_scene_and_exactly_the_needles_a_frame_shows() -> None:
    video = split_videos("train", 1)[0]
    needle = video.needles[0]
    inside = (needle.start + needle.end) / 2
    before = max(0.0, needle.start - 3.0)
    text = describe(video, [before, inside])
    assert needle.statement in text and f"At {inside:.0f} s" in text
    assert video.scene_at(inside).description in text
    empty = describe(video, [before])
    assert needle.statement not in empty
    plain = describe(video, [before, inside], style="plain")
    assert plain.startswith("The frames show ") and f"I see {needle.statement}." in plain
    assert " s:" not in plain and "At " not in plain
    terse = describe(video, [before, inside], style="terse")
    assert terse.startswith(video.scene_at(before).style.name.capitalize())
    assert f"I see {needle.statement}." in terse and len(terse) < len(plain)


def test_a_plain_teacher_writes_no_times_but_answers_with_its_window() -> None:
    sample = split_samples("train", 1)[0]
    video = sample.video
    needle = video.needle_for(sample.question)  # type: ignore[union-attr]
    assert needle is not None
    for style in ("plain", "terse"):
        teacher = FrameScriptedTeacher(SMOKE, style=style)
        teacher.begin_question(sample, 0)
        reply = _turn(teacher, video, Interval(needle.start + 0.5, needle.start + 3.0), 4)
        _, rest = reply.split("</think>")
        assert "Seen: " in rest and " at " not in rest.split("<action>")[0]
        assert re.search(r'answer\("[A-D]", \[\d+, \d+\]\)', rest)


def test_a_terse_teacher_writes_fewer_words_about_the_same_frames() -> None:
    sample = split_samples("train", 1)[0]
    video = sample.video
    assert isinstance(video, SynthVideo)
    far = SMOKE.chunks(video.duration)[0]
    replies = {}
    for style in ("plain", "terse"):
        teacher = FrameScriptedTeacher(SMOKE, style=style)
        teacher.begin_question(sample, 0)
        replies[style] = _turn(teacher, video, far, 4)
    terse, plain = replies["terse"], replies["plain"]
    assert len(terse) < len(plain) / 1.5, (terse, plain)
    assert terse.split("<action>")[1] == plain.split("<action>")[1], "the same action"
    assert video.scene_at(far.start).style.name.capitalize() in terse
    with pytest.raises(ConfigError, match="style"):
        FrameScriptedTeacher(SMOKE, style="verbose")  # type: ignore[arg-type]


def _turn(teacher: FrameScriptedTeacher, video: object, window: Interval, n: int) -> str:
    batch = FrameBatch.sample(video, window, n, (56, 56))  # type: ignore[arg-type]
    return teacher.chat([{"role": "user", "content": ["window", batch, "question"]}]).text


def test_the_teacher_answers_only_when_a_frame_shows_the_evidence() -> None:
    sample = split_samples("train", 1)[0]
    video = sample.video
    needle = video.needle_for(sample.question)  # type: ignore[union-attr]
    assert needle is not None
    teacher = FrameScriptedTeacher(SMOKE)
    teacher.begin_question(sample, 0)
    chunks = SMOKE.chunks(video.duration)
    seen = Interval(needle.start + 0.5, min(needle.end, needle.start + 4.0))
    reply = _turn(teacher, video, seen, 4)
    assert re.search(r"<action>answer\(", reply)
    assert sample.options is not None and sample.answer is not None
    assert f'answer("{sample.answer}"' in reply and needle.fact in reply
    lo, hi = (float(x) for x in re.findall(r"\[(\d+), (\d+)\]", reply)[0])
    assert needle.start - 1 <= lo <= hi <= needle.end + 1, "the window of the frames that showed it"
    # far before the evidence: it writes what it sees, not where the answer is
    teacher.begin_question(sample, 1)
    first = chunks[0]
    reply = _turn(teacher, video, first, 4)
    if not any(needle.visible(t) for t in FrameBatch.sample(video, first, 4).times):
        assert "answer(" not in reply and needle.fact not in reply
        assert f"{needle.start:.0f}" not in reply.split("<action>")[0]


def test_the_teacher_needs_a_synthetic_question() -> None:
    sample = load_suite("synth-tiny", limit=1)[0]
    bad = sample.__class__(**{**sample.__dict__, "question": "Something else?"})
    with pytest.raises(ConfigError):
        FrameScriptedTeacher().begin_question(bad, 0)


def test_distilled_frame_teacher_episodes_pass_validation_and_write_their_notes(
    tmp_path: Path,
) -> None:
    samples = split_samples("train", 1, limit=4)
    stats = distill(
        FrameScriptedTeacher(SMOKE),
        samples,
        tmp_path,
        DistillConfig(tries=1).with_episode(rules=SMOKE),
    )
    assert stats.kept >= 3, stats.summary()
    turns = [json.loads(line) for line in (tmp_path / "turns.jsonl").read_text().splitlines()]
    kinds = {re.search(r"<action>(\w+)", t["completion"][0]["content"]).group(1) for t in turns}  # type: ignore[union-attr]
    assert "answer" in kinds and kinds & {"speed", "rewatch"}
    for t in turns:
        reply = t["completion"][0]["content"]
        assert "<think>" in reply and "<memory>" in reply


def test_a_scenes_teacher_names_the_scenes_and_the_asked_needle_only() -> None:
    sample = split_samples("train", 1)[0]
    video = sample.video
    assert isinstance(video, SynthVideo)
    asked = video.needle_for(sample.question)
    assert asked is not None
    others = [n for n in video.needles if n is not asked]
    window = next(  # a window showing some other needle but not the asked one
        Interval(n.start, n.end) for n in others if not asked.visible((n.start + n.end) / 2)
    )
    teacher = FrameScriptedTeacher(SMOKE, style="scenes")
    teacher.begin_question(sample, 0)
    reply = _turn(teacher, video, window, 4)
    assert "I see" not in reply and not any(n.statement in reply for n in others)
    memory = reply.split("<memory>")[1].split("</memory>")[0]
    assert memory == f"Seen: {video.scene_at(window.start).style.name}."
    reply = _turn(teacher, video, Interval(asked.start + 0.5, asked.start + 3.0), 4)
    assert f"I see {asked.statement}. Answer: " in reply and 'answer("' in reply
    assert reply.split("<memory>")[1].startswith("Seen: ")


def _first_mcq() -> tuple[list[VideoQA], VideoQA, SynthVideo]:
    """The first training video's questions, its first MCQ and its video."""
    samples = split_samples("train", 1)
    mcq = next(s for s in samples if s.options)
    video = mcq.video
    assert isinstance(video, SynthVideo) and mcq.options is not None
    return samples, mcq, video


def test_a_blind_teacher_skims_to_the_end_and_guesses_the_option_of_its_try() -> None:
    samples, mcq, video = _first_mcq()
    chunks = SMOKE.chunks(video.duration)
    teacher = FrameScriptedTeacher(SMOKE, style="scenes", guess_share=1.0)
    for attempt in range(len(mcq.options)):
        teacher.begin_question(mcq, attempt)
        assert teacher.blind
        early = _turn(teacher, video, chunks[0], 4)
        assert re.search(r"<action>speed\([24]x\)</action>", early), early
        assert "I see" not in early, "a blind turn names the scenes only"
        last = _turn(teacher, video, chunks[-1], 4)
        letter = "ABCD"[attempt]
        assert f'<action>answer("{letter}", [' in last and f"Guess: {letter} (" in last
    open_question = next(s for s in samples if not s.options)
    teacher.begin_question(open_question, 0)
    assert not teacher.blind, "an open question has no option to guess"
    with pytest.raises(ConfigError, match="guess_share"):
        FrameScriptedTeacher(SMOKE, style="scenes", guess_share=1.5)
    with pytest.raises(ConfigError, match="needs a style of"):
        FrameScriptedTeacher(SMOKE, style="terse", guess_share=0.5)


def test_a_lead_teacher_opens_an_answer_s_thought_with_the_answer() -> None:
    _, mcq, video = _first_mcq()
    asked = video.needle_for(mcq.question)
    assert asked is not None
    teacher = FrameScriptedTeacher(SMOKE, style="lead")
    teacher.begin_question(mcq, 0)
    reply = _turn(teacher, video, Interval(asked.start + 0.5, asked.start + 3.0), 4)
    letter = "ABCD"[mcq.options.index(asked.fact)]
    assert reply.startswith(f"<think>{letter} ({asked.fact}): I see {asked.statement}. "), reply
    assert f'<action>answer("{letter}", [' in reply
    chunks = SMOKE.chunks(video.duration)
    blind = FrameScriptedTeacher(SMOKE, style="lead", guess_share=1.0)
    blind.begin_question(mcq, 2)
    early = _turn(blind, video, chunks[0], 4)
    assert early.startswith("<think>") and "?" not in early.split("</think>")[0]
    last = _turn(blind, video, chunks[-1], 4)
    assert last.startswith(f"<think>C ({mcq.options[2]})? A guess"), last


def test_a_blind_teacher_guesses_at_a_short_last_chunk_its_frames_miss(tmp_path: Path) -> None:
    # synth-tiny-000 lasts 167 s: its last chunk (160-167 s) is short, and the 4x window
    # over it shows no frame inside it; the window line still says it reached the end
    samples = [s for s in load_suite("synth-tiny", limit=4) if s.options]
    teacher = FrameScriptedTeacher(SMOKE, style="scenes", guess_share=1.0)
    stats = distill(teacher, samples, tmp_path, DistillConfig(tries=4).with_episode(rules=SMOKE))
    assert stats.kept == len(samples) > 0, stats.summary()
    assert stats.guessed == len(samples)


def test_distilled_blind_questions_keep_the_try_whose_guess_was_right(tmp_path: Path) -> None:
    samples = [s for s in split_samples("train", 1) if s.options][:2]
    teacher = FrameScriptedTeacher(SMOKE, style="scenes", guess_share=1.0)
    stats = distill(teacher, samples, tmp_path, DistillConfig(tries=4).with_episode(rules=SMOKE))
    assert stats.kept == len(samples), stats.summary()
    kept = [json.loads(line) for line in (tmp_path / "trajectories.jsonl").read_text().splitlines()]
    for row, sample in zip(kept, samples, strict=True):
        assert row["tries"] == "ABCD".index(str(sample.answer)) + 1
        assert row["reference_chunk"] is None, "a guess marks no evidence"
    assert load_reference_chunks(tmp_path / "trajectories.jsonl") == {}
    finals = [
        json.loads(line)["completion"][0]["content"]
        for line in (tmp_path / "turns.jsonl").read_text().splitlines()
    ]
    assert sum("Guess: " in reply for reply in finals) == len(samples)


def test_a_blind_episode_ends_on_the_window_that_says_only_answer_is_left() -> None:
    from policies.training.episodes import run_recorded_episode
    from policies.videoscout import END_NOTE

    sample = next(s for s in split_samples("train", 1) if s.options)
    for place in ("window", "last", "off"):
        teacher = FrameScriptedTeacher(SMOKE, style="scenes", guess_share=1.0)
        teacher.begin_question(sample, 0)
        run = run_recorded_episode(
            teacher,
            sample,
            EpisodeSettings(rules=SMOKE, layout=PromptLayout(place), max_turns=64),
            seed=0,
        )
        prompts = [" ".join(map(str, t.messages[-1]["content"])) for t in run.turns]
        assert run.record["ended_by"] == "answer" and "Guess: " in run.turns[-1].reply
        noted = [END_NOTE in p for p in prompts]
        assert noted == [False] * (len(prompts) - 1) + [place != "off"]


def test_a_steady_teacher_guesses_at_the_end_a_needle_its_frames_missed() -> None:
    samples, _, _ = _first_mcq()
    steady = FrameScriptedTeacher(SMOKE, style="lead", steady_speed=2)
    for mcq in (s for s in samples if s.options):
        video = mcq.video
        assert isinstance(video, SynthVideo) and mcq.options is not None
        asked = video.needle_for(mcq.question)
        last = SMOKE.chunks(video.duration)[-1]
        if asked is not None and asked.end < last.start:
            break
    else:
        pytest.fail("no multiple-choice question whose needle ends before the last chunk")
    for attempt in range(len(mcq.options)):
        steady.begin_question(mcq, attempt)
        assert not steady.blind, "a steady teacher plays every question sighted"
        reply = _turn(steady, video, last, 4)
        letter = "ABCD"[attempt]
        assert f'<action>answer("{letter}", [' in reply and "A guess at the end" in reply
        assert steady.blind, "a guessed answer is flagged, so no reference chunk is recorded"
    steady.begin_question(mcq, 0)
    assert not steady.blind, "each question starts unguessed"


def test_a_steady_teacher_watches_on_at_one_speed_until_a_frame_shows_the_needle(
    tmp_path: Path,
) -> None:
    _, mcq, video = _first_mcq()
    asked = video.needle_for(mcq.question)
    assert asked is not None
    chunks = SMOKE.chunks(video.duration)
    steady = FrameScriptedTeacher(SMOKE, style="lead", steady_speed=2)
    steady.begin_question(mcq, 0)
    before = [c for c in chunks if c.end < asked.start]
    wide = Interval(before[0].start, before[-1].end) if len(before) > 1 else before[0]
    for window in [*before, wide]:  # a privileged teacher would skim at 4x or rewatch
        reply = _turn(steady, video, window, 4)
        assert reply.endswith("<action>speed(2x)</action>"), reply
    sighted = _turn(steady, video, Interval(asked.start + 0.5, asked.start + 3.0), 4)
    assert 'answer("' in sighted
    slow = FrameScriptedTeacher(SMOKE, style="lead", steady_speed=1)  # smoke 2x skips needles
    samples = split_samples("train", 1, limit=4)
    stats = distill(slow, samples, tmp_path, DistillConfig(tries=1).with_episode(rules=SMOKE))
    rows = [json.loads(line) for line in (tmp_path / "turns.jsonl").read_text().splitlines()]
    actions = {re.search(r"<action>(\w+\(\S*?\))", r["completion"][-1]["content"])[1]
               for r in rows if "answer(" not in r["completion"][-1]["content"]}  # type: ignore[index]  # fmt: skip
    assert stats.kept == 4 and actions == {"speed(1x)"}
    with pytest.raises(ConfigError, match="steady_speed 3"):
        FrameScriptedTeacher(SMOKE, style="lead", steady_speed=3)
