"""Open answer repeats: each open answer turn of the distilled turns shown several times.

Half a benchmark's questions may be open (a free-text answer), but with ``--option-orders
N`` each MCQ answer turn comes N times and each open one once. A small student then sees
MCQ-shaped answers N times as often and writes them to open questions too (an option
letter, or its thought shaped ``C (word)``). Repeating each open answer turn weighs the
two answer forms alike again, without changing what any turn says.

:func:`with_open_answer_repeats` repeats the open answer turns of ``turns.jsonl`` rows
(:mod:`policies.training.distill`); the lab's ``sft --open-answer-repeats N`` trains
on them. An open answer turn is one whose reply calls ``answer`` (the env's call parser)
and whose prompt has no options block.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from experiments.videoscout_pixel.option_orders import prompt_options
from policies.training.turn_rows import row_reply
from video_env.actions.parsing import find_calls
from video_env.errors import ConfigError

__all__ = ["is_open_answer_turn", "with_open_answer_repeats"]


def is_open_answer_turn(row: dict[str, Any]) -> bool:
    """Whether ``row`` answers an open question (an answer action, no options offered)."""
    reply = row_reply(row)
    return reply is not None and bool(find_calls(reply, ("answer",))) and not prompt_options(row)


def with_open_answer_repeats(rows: Iterable[dict[str, Any]], repeats: int) -> list[dict[str, Any]]:
    """``rows`` with each open answer turn followed by ``repeats - 1`` copies of it.

    Args:
        rows: ``turns.jsonl`` rows (option-order rotations included, if any).
        repeats: Times each open answer turn is shown, the original included (1: the rows
            as they are).

    Returns:
        The rows, each open answer turn followed by its copies (ids ``ID@aK``).

    Raises:
        ConfigError: For ``repeats`` < 1.
    """
    if repeats < 1:
        raise ConfigError(f"open answer repeats must be at least 1, got {repeats}")
    return [
        shown
        for row in rows
        for shown in _shown(row, repeats if repeats > 1 and is_open_answer_turn(row) else 1)
    ]


def _shown(row: dict[str, Any], times: int) -> list[dict[str, Any]]:
    """``row`` and ``times - 1`` copies of it (ids ``ID@aK``)."""
    return [row] + [
        {**copy.deepcopy(row), "id": f"{row.get('id', '')}@a{k}"} for k in range(1, times)
    ]
