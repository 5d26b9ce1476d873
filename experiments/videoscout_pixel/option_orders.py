"""Option-order augmentation of distilled turns: each MCQ answer in every option order.

A distilled dataset holds one answer turn per question, its letter fixed by the order the
question's options happened to come in. A small student can fit those letters without
reading the frames (a letter per video, a letter per phrase of its notes). Showing the
same answer turn with its options rotated — the right option at each letter in turn, the
reply's letters rewritten to follow — leaves the frames as the only thing that tells the
letters apart: what the student must read to answer.

:func:`with_option_orders` rotates the MCQ answer turns of ``turns.jsonl`` rows
(:mod:`policies.training.distill`); the lab's ``sft --option-orders N`` trains on
them. A reply names a letter as the teacher writes it: ``answer("C"`` in its action and
``C (option text)`` in its thought or notes; a row whose reply names a letter any other
way stays as it is (never a half-rewritten reply; "A" and "I" opening a sentence before a
lower-case word are read as words).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from policies.training.turn_rows import row_reply, text_slots
from video_env.errors import ConfigError
from video_env.types import OPTION_LETTERS

__all__ = ["prompt_options", "rotate_row", "with_option_orders"]

#: The options block of a prompt (``policies.prompts.options_block``).
_OPTIONS = re.compile(r"Options:\n(?P<lines>(?:[A-Z]\. [^\n]*\n)+)")
_OPTION_LINE = re.compile(r"^(?P<letter>[A-Z])\. (?P<text>.*)$")
#: A letter in the action: ``answer("C"`` (quoted or not).
_ACTION_LETTER = re.compile(r'(?P<head>answer\(\s*"?)(?P<letter>[A-Z])(?P<tail>"?\s*[,)])')
#: A letter named with its option's text: ``C (pink)``.
_NAMED_LETTER = re.compile(r"\b(?P<letter>[A-Z]) \((?P<text>[^()]*)\)")
#: A standalone capital that could be a letter (what must all be accounted for).
_LONE_LETTER = re.compile(r"(?<![A-Za-z])[A-Z](?![A-Za-z])")
#: "A" and "I" opening a sentence before a lower-case word are words ("? A guess",
#: ": I see"), not letters.
_SENTENCE_WORD = re.compile(r"(?:^|>|[.?!:;] )(?P<word>[AI]) [a-z]")


def with_option_orders(rows: Iterable[dict[str, Any]], orders: int) -> list[dict[str, Any]]:
    """``rows`` with each MCQ answer turn also in ``orders - 1`` rotations of its options.

    Args:
        rows: ``turns.jsonl`` rows.
        orders: Option orders per MCQ answer turn, the original included (1: the rows as
            they are). A question with fewer options gets as many orders as it has.

    Returns:
        The rows, each rotatable one followed by its rotations (ids ``ID@oK``).

    Raises:
        ConfigError: For ``orders`` < 1.
    """
    if orders < 1:
        raise ConfigError(f"option orders must be at least 1, got {orders}")
    out: list[dict[str, Any]] = []
    for row in rows:
        out.append(row)
        for shift in range(1, orders):
            rotated = rotate_row(row, shift)
            if rotated is None:
                break
            out.append(rotated)
    return out


def rotate_row(row: dict[str, Any], shift: int) -> dict[str, Any] | None:
    """``row`` with its options moved ``shift`` letters on (A→B, …, D→A for 4 options).

    ``None`` when the row is not an MCQ answer turn, when ``shift`` gives back the same
    order, or when its reply names a letter in a way this cannot follow.
    """
    reply = row_reply(row)
    options = prompt_options(row)
    if reply is None or not options or not _ACTION_LETTER.search(reply):
        return None
    n = len(options)
    if shift % n == 0:
        return None
    letters = OPTION_LETTERS[:n]

    def moved(letter: str) -> str:
        return letters[(letters.index(letter) + shift) % n]

    texts = dict(zip(letters, options, strict=True))
    named = list(_NAMED_LETTER.finditer(reply))
    if any(m["letter"] not in texts or texts[m["letter"]] != m["text"] for m in named):
        return None
    actions = list(_ACTION_LETTER.finditer(reply))
    if any(m["letter"] not in texts for m in actions):
        return None
    spans = {m.start("letter") for m in [*named, *actions]}
    words = {m.start("word") for m in _SENTENCE_WORD.finditer(reply)}
    lone = [m for m in _LONE_LETTER.finditer(reply) if m[0] in texts and m.start() not in words]
    if any(m.start() not in spans for m in lone):
        return None  # a letter written some other way (or a word like "I")
    new_reply = _ACTION_LETTER.sub(lambda m: m["head"] + moved(m["letter"]) + m["tail"], reply)
    new_reply = _NAMED_LETTER.sub(lambda m: f"{moved(m['letter'])} ({m['text']})", new_reply)
    order = [options[(i - shift) % n] for i in range(n)]  # the option now at each letter
    block = "".join(f"{letters[i]}. {text}\n" for i, text in enumerate(order))
    rotated = copy.deepcopy(row)
    _map_texts(rotated, lambda text: _OPTIONS.sub(lambda _m: f"Options:\n{block}", text))
    rotated["completion"][-1]["content"] = new_reply
    rotated["id"] = f"{row.get('id', '')}@o{shift}"
    return rotated


def prompt_options(row: dict[str, Any]) -> Sequence[str]:
    """The options of the row's (one) options block; empty when it has none or several."""
    blocks = [m for text in _texts(row) for m in _OPTIONS.finditer(text)]
    if len(blocks) != 1:
        return ()
    lines = [_OPTION_LINE.match(line) for line in blocks[0]["lines"].splitlines()]
    if any(m is None for m in lines):
        return ()
    letters = [m["letter"] for m in lines if m]
    if letters != list(OPTION_LETTERS[: len(letters)]):
        return ()
    return [m["text"] for m in lines if m]


def _texts(row: dict[str, Any]) -> Iterator[str]:
    """The texts of the row's prompt."""
    return (holder[key] for holder, key in text_slots(row))


def _map_texts(row: dict[str, Any], fn: Callable[[str], str]) -> None:
    """Replace every text of the row's prompt by ``fn(text)``, in place."""
    for holder, key in text_slots(row):
        holder[key] = fn(holder[key])
