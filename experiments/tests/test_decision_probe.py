"""The VideoScout decision probe: when a student answers, on a lead teacher's MCQ turns."""

from pathlib import Path

import pytest

from experiments.tests.test_letter_probe import scenes_turns
from experiments.videoscout_pixel.decision_probe import (
    KINDS,
    DecisionTurn,
    decision_turns,
    probe,
    table,
)


def test_the_turns_are_the_lead_teachers_mcq_turns_by_kind(tmp_path: Path) -> None:
    samples = scenes_turns(tmp_path, 6, question_first=True, style="lead")
    mcqs = {s.id: s for s in samples if s.options}
    turns = decision_turns(tmp_path / "turns.jsonl")
    assert {t.row["sample_id"] for t in turns} <= set(mcqs)  # open questions are left out
    kinds = {t.kind for t in turns}
    assert "in view" in kinds and kinds & {k for k in KINDS if "not" in k} and kinds <= set(KINDS)
    for turn in turns:
        reply = turn.row["completion"][-1]["content"]
        sample = mcqs[turn.row["sample_id"]]
        assert turn.letters == "ABCD"[: len(sample.options or ())]
        assert reply.startswith(f"<think>{turn.first}")
        if turn.kind == "in view":
            assert turn.first == sample.answer and "answer(" in reply
        else:
            assert "answer(" not in reply
            assert (turn.first in turn.letters) == (turn.kind == "not in view, lettered scene")
    scenes_turns(tmp_path / "scenes", 4, question_first=True)
    scenes = decision_turns(tmp_path / "scenes" / "turns.jsonl")
    assert not any(t.kind == "in view" for t in scenes)  # a scenes thought opens otherwise


def test_the_table_counts_answers_and_their_letters_by_kind() -> None:
    def turn(kind: str, first: str, video: str) -> DecisionTurn:
        return DecisionTurn({}, video, kind, "ABCD", first)

    turns = [turn("in view", "C", "v1"), turn("in view", "A", "v2"),
             turn("not in view, lettered scene", "B", "v1"),
             turn("not in view, other scene", "P", "v2")]  # fmt: skip
    text, counts = table({"m": ["C", "B", "B", None]}, turns)
    assert counts == {"in view": 2, "not in view, lettered scene": 1, "not in view, other scene": 1}
    head, _, row = text.splitlines()
    cells = [c.split(" (")[0] for c in row.strip("| ").split(" | ")[1:]]
    named = dict(zip(head.strip("| ").split(" | ")[1:], cells, strict=True))
    assert named == {
        "answers, in view": "1.00",
        "answers, not in view, lettered scene": "1.00",
        "answers, not in view, other scene": "0.00",
        "right, in view": "0.50",
        "the scene's capital, lettered scene": "1.00",
    }


def test_the_probe_reads_the_decision_of_each_turn(tmp_path: Path, tiny_qwen_dir: str) -> None:
    scenes_turns(tmp_path, 4, question_first=True, style="lead")
    turns = decision_turns(tmp_path / "turns.jsonl")[:3]
    read = probe(tiny_qwen_dir, turns)
    assert len(read) == 3 and all(
        r is None or r in t.letters for r, t in zip(read, turns, strict=True)
    )
    assert probe(tiny_qwen_dir, turns) == read  # greedy: the same each time


def test_a_scene_name_opens_with_the_token_of_its_capital_letter() -> None:
    transformers = pytest.importorskip("transformers")
    from video_env.pixel import PIXEL_VLM_DIR

    tok = transformers.AutoTokenizer.from_pretrained(str(PIXEL_VLM_DIR), local_files_only=True)
    think = len(tok("<think>", add_special_tokens=False)["input_ids"])
    answer = tok("<think>B (violin)", add_special_tokens=False)["input_ids"]
    scene = tok("<think>Beach. Skim.", add_special_tokens=False)["input_ids"]
    assert answer[think] == scene[think]  # the same first token: the decision comes after it
    assert answer[think + 1] != scene[think + 1]
