"""Teacher distillation: rejection sampling, validation, the TRL-format dataset, resuming.

The teacher here is ``GroundTruthScriptedTeacher``: a script that reads the answer window
(a stand-in for a strong VLM teacher, used only as the teacher, never evaluated).
"""

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from policies.training.cli import RULES
from policies.training.distill import (
    DistillConfig,
    distill,
    load_reference_chunks,
    validate,
    with_reference_chunks,
)
from policies.training.episodes import EpisodeRun, Turn
from policies.training.teachers import GroundTruthScriptedTeacher
from policies.videoscout.prompt import PromptLayout
from video_env.cli import main
from video_env.envs import PacingEnv
from video_env.errors import ConfigError
from video_env.synth.suites import load_suite

SMOKE = RULES["cpu-smoke"]()


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_kept_episodes_become_trl_rows_with_the_exact_frames(tmp_path: Path) -> None:
    samples = load_suite("synth-tiny", limit=2)
    teacher = GroundTruthScriptedTeacher(mistake_rate=0.5, seed=1)
    stats = distill(teacher, samples, tmp_path, DistillConfig().with_episode(rules=SMOKE))
    assert stats.kept == 2 and stats.dropped == 0
    assert stats.episodes > 2 and stats.rejections["wrong answer"] == stats.episodes - 2
    turns = rows(tmp_path / "turns.jsonl")
    assert len(turns) == stats.turns
    first = turns[0]
    assert set(first) >= {"prompt", "completion", "images", "frame_times"}
    system, user = first["prompt"]
    assert system["role"] == "system" and "<think>" in system["content"]
    kinds = [p["type"] for p in user["content"]]
    assert kinds == ["text"] + ["image"] * len(first["images"]) + ["text"]
    assert first["completion"][0]["role"] == "assistant"
    assert first["completion"][0]["content"].startswith("<think>")
    # the images are the frames the env showed at those times, losslessly
    env = PacingEnv(samples[:1], pixel_observations=True, sensors=(), rules=SMOKE)
    obs, _ = env.reset(seed=0, options={"sample": samples[0]})
    n = int(obs["n_frames"])
    assert np.allclose(first["frame_times"], obs["timestamps"][:n])
    for i, path in enumerate(first["images"]):
        assert np.array_equal(np.asarray(Image.open(path)), obs["frames"][i, :56, :56])
    # trajectories carry the teacher's answer chunk, which the env then uses as T
    chunks = load_reference_chunks(tmp_path / "trajectories.jsonl")
    trajectory = rows(tmp_path / "trajectories.jsonl")[0]
    assert chunks[samples[0].id] == trajectory["reference_chunk"] >= 1
    (tagged, _) = with_reference_chunks(samples, chunks)
    assert tagged.meta["reference_chunk"] == trajectory["reference_chunk"]


def test_a_question_the_teacher_never_gets_right_is_dropped(tmp_path: Path) -> None:
    sample = load_suite("synth-tiny", limit=1)
    teacher = GroundTruthScriptedTeacher(mistake_rate=1.0)
    stats = distill(teacher, sample, tmp_path, DistillConfig(tries=3).with_episode(rules=SMOKE))
    assert (stats.kept, stats.dropped, stats.episodes) == (0, 1, 3)
    assert (tmp_path / "turns.jsonl").read_text() == ""
    (question,) = rows(tmp_path / "questions.jsonl")
    assert question["kept"] is False and question["rejections"] == [["wrong answer"]] * 3


def test_resuming_skips_finished_questions_and_drops_partial_ones(tmp_path: Path) -> None:
    samples = load_suite("synth-tiny", limit=3)
    teacher = GroundTruthScriptedTeacher()
    distill(teacher, samples[:2], tmp_path, DistillConfig().with_episode(rules=SMOKE))
    before = rows(tmp_path / "turns.jsonl")
    # a run killed while writing the third question: its turns but no question row
    with (tmp_path / "turns.jsonl").open("a") as f:
        f.write(json.dumps({**before[0], "sample_id": samples[2].id}) + "\n{partial")
    stats = distill(teacher, samples, tmp_path, DistillConfig().with_episode(rules=SMOKE))
    assert stats.resumed == 2 and stats.kept == 1 and stats.episodes == 1
    after = rows(tmp_path / "turns.jsonl")
    assert after[: len(before)] == before
    assert [r["sample_id"] for r in after].count(samples[2].id) == stats.turns
    assert len(rows(tmp_path / "questions.jsonl")) == 3


def _run(replies: list[str], finish: str = "stop", **record: Any) -> EpisodeRun:
    base = {"ended_by": "answer", "correct": True, "invalid_actions": 0, "error": None}
    return EpisodeRun({**base, **record}, [Turn([], r, finish) for r in replies])


def test_validation_rules() -> None:
    (sample,) = load_suite("synth-tiny", limit=1)  # MCQ, answer D (trophy)
    good = '<think>It is D (trophy).</think><memory>m</memory><action>answer("D")</action>'
    assert validate(_run([good]), sample) == []
    unquoted = "<think>So D.</think><memory>m</memory><action>answer(D, [40, 70])</action>"
    assert validate(_run([unquoted]), sample) == []
    assert validate(_run([good], correct=False), sample) == ["wrong answer"]
    assert validate(_run([good], ended_by="max_steps"), sample) == ["no answer"]
    assert "illegal action" in validate(_run([good], invalid_actions=1), sample)
    assert "truncated reply" in validate(_run([good], finish="length"), sample)
    empty = '<think> </think><memory>m</memory><action>answer("D")</action>'
    assert validate(_run([empty]), sample) == ["empty reasoning"]
    other = '<think>It must be B (lantern).</think><memory>m</memory><action>answer("D")</action>'
    assert validate(_run([other]), sample) == ["answer does not match the reasoning"]
    vague = '<think>I have seen enough.</think><memory>m</memory><action>answer("D")</action>'
    assert validate(_run([vague]), sample) == ["answer does not match the reasoning"]


def test_cli_prints_statistics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["train", "distill", "--teacher", "scripted-ground-truth", "--suite", "synth-tiny"]
    args += ["--limit", "2", "--rules", "cpu-smoke", "--out", str(tmp_path)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "SCRIPTED teacher" in out and "kept 2, dropped 0" in out
    assert json.loads((tmp_path / "stats.json").read_text())["kept"] == 2


def test_a_folder_made_under_other_pacing_rules_is_not_resumed(tmp_path: Path) -> None:
    from policies.videoscout.record import trained_rules

    teacher = GroundTruthScriptedTeacher()
    samples = load_suite("synth-tiny", limit=1)
    distill(teacher, samples, tmp_path, DistillConfig().with_episode(rules=SMOKE))
    assert trained_rules(tmp_path) == SMOKE
    with pytest.raises(ConfigError, match="other pacing rules"):
        distill(teacher, samples, tmp_path, DistillConfig().with_episode(rules=RULES["paper"]()))
    assert trained_rules(tmp_path) == SMOKE, "the record is left as it was"


def test_a_folder_made_with_another_end_note_is_not_resumed(tmp_path: Path) -> None:
    from policies.videoscout.record import trained_end_note

    teacher = GroundTruthScriptedTeacher()
    samples = load_suite("synth-tiny", limit=1)
    distill(
        teacher,
        samples,
        tmp_path,
        DistillConfig().with_episode(rules=SMOKE, layout=PromptLayout(end_note="last")),
    )
    assert trained_end_note(tmp_path) == "last"
    with pytest.raises(ConfigError, match="end note"):
        distill(
            teacher,
            samples,
            tmp_path,
            DistillConfig().with_episode(rules=SMOKE, layout=PromptLayout(end_note="window")),
        )
    distill(
        teacher,
        samples,
        tmp_path,
        DistillConfig().with_episode(rules=SMOKE, layout=PromptLayout(end_note="last")),
    )  # resumes
    assert trained_end_note(tmp_path) == "last"
    with pytest.raises(ConfigError, match="end_note"):
        DistillConfig().with_episode(layout=PromptLayout(end_note="top"))


def test_a_folder_made_with_the_question_elsewhere_is_not_resumed(tmp_path: Path) -> None:
    from policies.videoscout.record import trained_question_first

    teacher = GroundTruthScriptedTeacher()
    samples = load_suite("synth-tiny", limit=1)
    distill(
        teacher,
        samples,
        tmp_path,
        DistillConfig().with_episode(rules=SMOKE, layout=PromptLayout(question_first=True)),
    )
    assert trained_question_first(tmp_path) is True
    rows = [json.loads(line) for line in (tmp_path / "turns.jsonl").read_text().splitlines()]
    first_text = rows[0]["prompt"][-1]["content"][0]["text"]
    assert "Question:" in first_text, "the student is trained on the layout it will see"
    with pytest.raises(ConfigError, match="question"):
        distill(teacher, samples, tmp_path, DistillConfig().with_episode(rules=SMOKE))
    distill(
        teacher,
        samples,
        tmp_path,
        DistillConfig().with_episode(rules=SMOKE, layout=PromptLayout(question_first=True)),
    )
    assert trained_question_first(tmp_path) is True


def test_a_folder_recorded_before_question_first_is_the_papers_layout(tmp_path: Path) -> None:
    from policies.videoscout.record import save_trained_rules, trained_question_first

    teacher = GroundTruthScriptedTeacher()
    samples = load_suite("synth-tiny", limit=2)
    distill(teacher, samples[:1], tmp_path, DistillConfig().with_episode(rules=SMOKE))
    save_trained_rules(tmp_path, SMOKE)  # as written before the setting
    with pytest.raises(ConfigError, match="after the frames"):
        distill(
            teacher,
            samples,
            tmp_path,
            DistillConfig().with_episode(rules=SMOKE, layout=PromptLayout(question_first=True)),
        )
    distill(teacher, samples, tmp_path, DistillConfig().with_episode(rules=SMOKE))  # resumes
    assert trained_question_first(tmp_path) is None, "still says nothing"


def test_a_folder_recorded_before_end_notes_keeps_naming_none(tmp_path: Path) -> None:
    from policies.videoscout.record import save_trained_rules, trained_end_note

    teacher = GroundTruthScriptedTeacher()
    samples = load_suite("synth-tiny", limit=2)
    distill(teacher, samples[:1], tmp_path, DistillConfig().with_episode(rules=SMOKE))
    save_trained_rules(tmp_path, SMOKE)  # as written before the setting: no place named
    distill(
        teacher,
        samples,
        tmp_path,
        DistillConfig().with_episode(rules=SMOKE, layout=PromptLayout(end_note="last")),
    )
    assert trained_end_note(tmp_path) is None, "its first turns' place is unknown"


def test_rl_commands_default_to_the_rules_their_model_was_trained_under(tmp_path: Path) -> None:
    from argparse import Namespace

    from policies.training.cli import pacing_rules as _rules
    from policies.videoscout.record import save_trained_rules

    assert _rules(Namespace(rules=None, model=str(tmp_path))) == RULES["paper"]()
    save_trained_rules(tmp_path, SMOKE)
    assert _rules(Namespace(rules=None, model=str(tmp_path))) == SMOKE
    assert _rules(Namespace(rules="paper", model=str(tmp_path))) == RULES["paper"](), "given"
    assert _rules(Namespace(rules=None)) == RULES["paper"](), "distill has no --model"


def test_rl_commands_ask_the_question_where_their_model_learned_it(tmp_path: Path) -> None:
    from policies.training.cli import layout_from_args as _layout
    from policies.videoscout.record import save_trained_rules
    from video_env.cli import build_parser

    def first(*flags: str) -> bool:
        args = build_parser().parse_args(
            ["train", "rl", "--model", str(tmp_path), "--out", "x", *flags]
        )
        return _layout(args).question_first

    assert not first(), "a model without a record: the paper's order"
    save_trained_rules(tmp_path, SMOKE, question_first=True)
    assert first() and not first("--no-question-first"), "recorded, unless told otherwise"
    save_trained_rules(tmp_path, SMOKE, question_first=False)
    assert first("--question-first") and not first()
