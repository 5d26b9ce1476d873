"""Option-order augmentation of distilled turns (the lab's ``sft --option-orders``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from experiments.videoscout_pixel.option_orders import rotate_row, with_option_orders
from experiments.videoscout_pixel.sft_extension import PixelTurnExtension
from policies.prompts import options_block
from video_env.errors import ConfigError

OPTIONS = ["lantern", "violin", "typewriter", "guitar"]


def turn_row(
    reply: str, options: list[str] | None = OPTIONS, row_id: str = "v/q#t3"
) -> dict[str, Any]:
    """A ``turns.jsonl`` row replying ``reply`` (``options=None``: an open question)."""
    block = options_block(options or [])
    return {
        "id": row_id,
        "prompt": [
            {"role": "system", "content": "Reply as <think>...</think>. Options: none here."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"Turn 3.\nQuestion: Which object?\n{block}\n"},
                    {"type": "image"},
                    {"type": "text", "text": "Your memory: Seen: beach.\n"},
                ],
            },
        ],
        "completion": [{"role": "assistant", "content": reply}],
        "images": ["f00.png"],
    }


def _answer(letter: str, thought: str) -> str:
    """A reply that answers ``letter`` after ``thought``."""
    return f'<think>{thought}</think><memory>m</memory><action>answer("{letter}", [1, 2])</action>'


def _options_of(row: dict[str, Any]) -> list[str]:
    text = row["prompt"][1]["content"][0]["text"]
    return [line[3:] for line in text.splitlines() if line[:1].isupper() and line[1:3] == ". "]


def test_a_rotation_moves_the_options_and_the_replys_letters_together() -> None:
    row = turn_row(_answer("B", "B (violin): I see a violin."))
    rotated = rotate_row(row, 1)
    assert rotated is not None
    assert _options_of(rotated) == ["guitar", "lantern", "violin", "typewriter"]
    assert rotated["completion"][0]["content"] == _answer("C", "C (violin): I see a violin.")
    assert rotated["id"] == "v/q#t3@o1"
    assert rotated["images"] == row["images"]
    assert row["completion"][0]["content"].startswith("<think>B (violin)")  # not mutated


def test_the_right_option_stands_at_every_letter_once() -> None:
    rows = with_option_orders([turn_row(_answer("D", "D (guitar)? A guess at the end."))], 4)
    assert len(rows) == 4
    letters = [r["completion"][0]["content"][7] for r in rows]
    assert sorted(letters) == ["A", "B", "C", "D"]
    for row, letter in zip(rows, letters, strict=True):
        assert _options_of(row)["ABCD".index(letter)] == "guitar"
        assert f'answer("{letter}"' in row["completion"][0]["content"]


def test_turns_that_are_no_mcq_answer_stay_single() -> None:
    speed = turn_row("<think>Beach.</think><memory>Seen: beach.</memory><action>speed(2x)</action>")
    open_answer = turn_row(_answer("violin", "I see a violin."), options=None)
    rows = [speed, open_answer]
    assert with_option_orders(copy.deepcopy(rows), 4) == rows


@pytest.mark.parametrize(
    "reply",
    [
        _answer("B", "Option B it is."),  # a letter without its option's text
        _answer("B", "B (guitar): I see."),  # a letter named with another option's text
        _answer("B", "Between A and B (violin)."),  # a letter mid-sentence, before a word
        _answer("B", "B (violin), so A is out."),
    ],
)
def test_a_reply_whose_letters_cannot_be_followed_is_left_as_it_is(reply: str) -> None:
    row = turn_row(reply)
    assert rotate_row(row, 1) is None
    assert with_option_orders([row], 4) == [row]


def test_words_that_open_a_sentence_are_not_letters() -> None:
    rotated = rotate_row(turn_row(_answer("A", "A (lantern): I see a lantern. A street.")), 2)
    assert rotated is not None
    assert rotated["completion"][0]["content"].startswith("<think>C (lantern): I see a lantern. A ")
    guess = rotate_row(turn_row(_answer("D", "D (guitar)? A guess at the end.")), 1)
    assert guess is not None and guess["completion"][0]["content"].startswith(
        "<think>A (guitar)? A"
    )


def test_orders_beyond_the_options_add_nothing_and_below_one_is_an_error() -> None:
    row = turn_row(_answer("A", "A (red): I see."), options=["red", "blue"])
    assert len(with_option_orders([row], 4)) == 2
    assert with_option_orders([row], 1) == [row]
    with pytest.raises(ConfigError):
        with_option_orders([row], 0)
    pytest.importorskip("datasets")
    with pytest.raises(ConfigError, match="option_orders"):
        PixelTurnExtension(option_orders=0)  # before anything is loaded or written


def test_load_turns_reads_the_rotations_as_a_dataset(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    from policies.training.sft import load_turns

    speed = "<think>Beach.</think><memory>m</memory><action>speed(1x)</action>"
    rows = [turn_row(_answer("B", "B (violin): I see.")), turn_row(speed, row_id="v/q#t1")]
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    plain = load_turns(path)
    rotated = load_turns(path, PixelTurnExtension(option_orders=4))
    assert len(plain) == 2
    assert len(rotated) == 5
    assert rotated.features == plain.features
    assert [r["id"] for r in rotated] == ["v/q#t3", "v/q#t3@o1", "v/q#t3@o2", "v/q#t3@o3", "v/q#t1"]
