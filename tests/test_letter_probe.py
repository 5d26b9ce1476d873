"""The VideoScout letter probe: the teacher's sighted MCQ answer turns, read by a model."""

from pathlib import Path

import pytest

from benchmarks.studies.videoscout_letter_probe import CONDITIONS, answer_turns, probe, table
from policies.training.cli import RULES, split_samples
from policies.training.distill import DistillConfig, distill
from policies.training.frame_teacher import FrameScriptedTeacher
from video_env.types import OPTION_LETTERS

SMOKE = RULES["cpu-smoke"]()


@pytest.mark.parametrize("question_first", [False, True])
def test_the_answer_turns_are_the_sighted_mcq_answers_in_either_layout(
    tmp_path: Path, question_first: bool
) -> None:
    samples = split_samples("train", 1, limit=6)
    config = DistillConfig(rules=SMOKE, tries=1, question_first=question_first)
    distill(FrameScriptedTeacher(SMOKE, style="scenes"), samples, tmp_path, config)
    turns = answer_turns(tmp_path / "turns.jsonl")
    mcqs = {s.id: s for s in samples if s.options}
    assert turns and {t.row["sample_id"] for t in turns} <= set(mcqs)
    for turn in turns:
        sample = mcqs[turn.row["sample_id"]]
        assert turn.question == sample.question and turn.options == tuple(sample.options or ())
        assert turn.letter == sample.answer in OPTION_LETTERS
        assert turn.statement and turn.memory.startswith("Seen: ")


def test_the_probe_reads_one_letter_per_turn_and_condition(
    tmp_path: Path, tiny_qwen_dir: str
) -> None:
    samples = split_samples("train", 1, limit=4)
    config = DistillConfig(rules=SMOKE, tries=1, question_first=True)
    distill(FrameScriptedTeacher(SMOKE, style="scenes"), samples, tmp_path, config)
    turns = answer_turns(tmp_path / "turns.jsonl")[:1]
    right = probe(tiny_qwen_dir, turns)
    assert set(right) == set(CONDITIONS) and all(len(v) == len(turns) for v in right.values())
    text = table({"tiny": right}, turns)
    assert text.count("\n") == 2 and all(c in text for c in CONDITIONS)
