"""The VideoScout letter probe: the teacher's sighted MCQ answer turns, read by a model."""

from pathlib import Path

import pytest

from experiments.videoscout_pixel.frame_teacher import FrameScriptedTeacher, TeacherStyle
from experiments.videoscout_pixel.letter_probe import CONDITIONS, answer_turns, probe, table
from policies.training.cli import RULES, split_samples
from policies.training.distill import DistillConfig, distill
from policies.videoscout.prompt import PromptLayout
from video_env.types import OPTION_LETTERS, VideoQA

SMOKE = RULES["cpu-smoke"]()


def scenes_turns(
    folder: Path, questions: int, question_first: bool, style: TeacherStyle = "scenes"
) -> list[VideoQA]:
    """A scenes teacher's turns on the first questions of one training video, in ``folder``."""
    samples = split_samples("train", 1, limit=questions)
    config = DistillConfig(tries=1).with_episode(
        rules=SMOKE, layout=PromptLayout(question_first=question_first)
    )
    distill(FrameScriptedTeacher(SMOKE, style=style), samples, folder, config)
    return samples


@pytest.mark.parametrize(
    ("question_first", "style"), [(False, "scenes"), (True, "scenes"), (True, "lead")]
)
def test_the_answer_turns_are_the_sighted_mcq_answers_in_either_layout(
    tmp_path: Path, question_first: bool, style: TeacherStyle
) -> None:
    samples = scenes_turns(tmp_path, 6, question_first, style)
    turns = answer_turns(tmp_path / "turns.jsonl")
    mcqs = {s.id: s for s in samples if s.options}
    assert turns and {t.row["sample_id"] for t in turns} <= set(mcqs)
    for turn in turns:
        sample = mcqs[turn.row["sample_id"]]
        assert turn.question == sample.question and turn.options == tuple(sample.options or ())
        assert turn.letter == sample.answer in OPTION_LETTERS
        assert turn.statement and turn.memory.startswith("Seen: ")
        assert "I see" not in turn.scenes and "Answer" not in turn.scenes


def test_the_probe_reads_one_letter_per_turn_and_condition(
    tmp_path: Path, tiny_qwen_dir: str
) -> None:
    scenes_turns(tmp_path, 4, question_first=True)
    turns = answer_turns(tmp_path / "turns.jsonl")[:1]
    right = probe(tiny_qwen_dir, turns)
    assert set(right) == set(CONDITIONS) and all(len(v) == len(turns) for v in right.values())
    text = table({"tiny": right}, turns)
    assert text.count("\n") == 2 and all(c in text for c in CONDITIONS)


def test_letters_are_scored_as_the_tokenizer_reads_them_in_the_teachers_reply() -> None:
    transformers = pytest.importorskip("transformers")
    from experiments.videoscout_pixel.letter_probe import letter_ids
    from video_env.pixel import PIXEL_VLM_DIR

    tok = transformers.AutoTokenizer.from_pretrained(str(PIXEL_VLM_DIR), local_files_only=True)
    thought = "<think>Park. I see a yellow balloon. Answer:"
    reply = tok(thought + " B (yellow).</think>", add_special_tokens=False)["input_ids"]
    (b,) = letter_ids(tok, thought, " {}", ["B"])
    assert reply[len(tok(thought, add_special_tokens=False)["input_ids"])] == b
    action = '<memory>Seen: park.</memory><action>answer("'
    reply = tok(action + 'B", [3, 9])</action>', add_special_tokens=False)["input_ids"]
    (b,) = letter_ids(tok, action, "{}", ["B"])
    assert reply[len(tok(action, add_special_tokens=False)["input_ids"])] == b
    with pytest.raises(ValueError, match="not one token"):
        letter_ids(tok, thought + " ", "{}", ["B"])  # the space belongs to the letter's token
