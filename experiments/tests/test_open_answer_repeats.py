"""Open answer repeats of distilled turns (the lab's ``sft --open-answer-repeats``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.tests.test_option_orders import OPTIONS, turn_row
from experiments.videoscout_pixel.open_answer_repeats import (
    is_open_answer_turn,
    with_open_answer_repeats,
)
from experiments.videoscout_pixel.sft_extension import PixelTurnExtension
from video_env.errors import ConfigError

SPEED = "<think>Beach.</think><memory>m</memory><action>speed(1x)</action>"


def _answer(answer: str) -> str:
    action = f'answer("{answer}", [1, 2])'
    return f"<think>{answer}: I see it.</think><memory>m</memory><action>{action}</action>"


def test_only_an_answer_to_a_question_without_options_is_an_open_answer_turn() -> None:
    assert is_open_answer_turn(turn_row(_answer("violin"), None))
    assert not is_open_answer_turn(turn_row(_answer("B")))  # an MCQ answer
    assert not is_open_answer_turn(turn_row(SPEED, None))  # an open question, still watching


def test_each_open_answer_turn_is_followed_by_its_copies_and_nothing_else_moves() -> None:
    open_answer = turn_row(_answer("violin"), None, "v/o#t2")
    rows = [turn_row(SPEED, None, "v/o#t1"), open_answer, turn_row(_answer("B"), OPTIONS, "v/m#t4")]
    repeated = with_open_answer_repeats(rows, 3)
    assert [r["id"] for r in repeated] == ["v/o#t1", "v/o#t2", "v/o#t2@a1", "v/o#t2@a2", "v/m#t4"]
    assert all(r["completion"] == open_answer["completion"] for r in repeated[1:4])
    repeated[2]["completion"][0]["content"] = "changed"
    assert open_answer["completion"][0]["content"] == _answer("violin")  # copies, not aliases


def test_one_repeat_keeps_the_rows_and_fewer_is_refused() -> None:
    rows = [turn_row(_answer("violin"), None), turn_row(SPEED, None, "v/q#t1")]
    assert with_open_answer_repeats(rows, 1) == rows
    with pytest.raises(ConfigError, match="at least 1"):
        with_open_answer_repeats(rows, 0)
    with pytest.raises(ConfigError, match="open_answer_repeats"):
        PixelTurnExtension(open_answer_repeats=0)  # before anything is loaded or written


def test_load_turns_repeats_open_answers_after_the_option_orders(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    from policies.training.sft import load_turns

    reply = '<think>B (violin): I see.</think><memory>m</memory><action>answer("B")</action>'
    mcq = turn_row(reply)
    rows = [mcq, turn_row(_answer("violin"), None, "v/o#t2")]
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    loaded = load_turns(path, PixelTurnExtension(option_orders=4, open_answer_repeats=4))
    ids = [r["id"] for r in loaded]
    assert ids == [f"v/q#t3{s}" for s in ("", "@o1", "@o2", "@o3")] + [
        f"v/o#t2{s}" for s in ("", "@a1", "@a2", "@a3")
    ]
