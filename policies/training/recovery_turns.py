"""Recovery turns: a distilled turn shown again after a failed reply, with the same reply.

A verified teacher never writes an invalid reply, so a student trained on its turns has
never seen the prompt that follows one: the same window, the turn count one on, and the
env's message ``Your last reply was invalid: ...`` after the notes. Met for the first
time in its own episodes, that prompt derails it — the pixel students answer it with a
bare ``</action>`` (the end of the example action the message quotes) until the env's
error allowance ends the episode, so one slip costs the whole episode.

A recovery turn is the teacher's turn as the env would show it after a failed reply —
the failure one a student makes from the teacher's own reply (its action cut off, its
answer window reversed, a speed the rules lack), the message the env's own parser gives
for it — with the teacher's reply unchanged as the completion: after a slip, act as
before. :func:`with_recovery_turns` adds one to a share of ``turns.jsonl`` rows;
``video-env train sft --recovery-turns SHARE`` trains on them. A row whose prompt does
not hold exactly one turn line and one notes line (the policy's templates) is left
without one.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

from video_env._seeding import stable_seed
from video_env.actions.pacing import PacingActionSet
from video_env.actions.types import InvalidAction
from video_env.envs.pacing import shown_error
from video_env.errors import ConfigError
from video_env.wrappers.text_actions import parse_text_action

__all__ = ["FAILURES", "failed_reply", "recovery_row", "with_recovery_turns"]

#: The failures a recovery turn follows, each made from the teacher's reply.
FAILURES = ("cut", "window", "speed")

#: The window line's turn count (``videoscout/window``) and the notes line
#: (``videoscout/memory``, ``videoscout/question``), after which the env's message goes.
_TURN = re.compile(r"^Turn (?P<n>\d+)\.", re.M)
_NOTES = re.compile(r"^Your memory: [^\n]*\n", re.M)
_ACTION = re.compile(r"<action>.*", re.S)
_WINDOW = re.compile(r"\[\s*(?P<start>[\d.]+)\s*,\s*(?P<end>[\d.]+)\s*\]")
_SPEED = re.compile(r"speed\(\s*\d+x\s*\)")


def with_recovery_turns(
    rows: Iterable[dict[str, Any]], share: float, seed: int = 0
) -> list[dict[str, Any]]:
    """``rows``, a ``share`` of them each followed by its recovery turn.

    Args:
        rows: ``turns.jsonl`` rows.
        share: The fraction of rows that get one (0: none, 1: every row that can),
            chosen by a hash of the row's id and ``seed``, as is each one's failure.
        seed: Seed of the choice.

    Returns:
        The rows, each chosen one followed by its recovery turn (id ``ID@r``).

    Raises:
        ConfigError: For a share outside [0, 1].
    """
    if not 0.0 <= share <= 1.0:
        raise ConfigError(f"the share of recovery turns must be in [0, 1], got {share}")
    out: list[dict[str, Any]] = []
    for row in rows:
        out.append(row)
        draw = stable_seed("recovery-turns", seed, str(row.get("id", "")))
        if (draw % 10_000) / 10_000 >= share:
            continue
        usable = [f for f in FAILURES if failed_reply(_reply(row), f) is not None]
        if usable:
            recovered = recovery_row(row, usable[(draw // 10_000) % len(usable)])
            out += [recovered] if recovered is not None else []
    return out


def failed_reply(reply: str, failure: str) -> str | None:
    """The teacher's ``reply`` with ``failure`` made in it; ``None`` where it has no place.

    ``cut``: the action is gone (a reply stopped short); ``window``: the answer's evidence
    window reversed; ``speed``: a speed the rules lack (``speed(3x)``).

    Raises:
        ConfigError: For an unknown failure.
    """
    if failure == "cut":
        cut = _ACTION.sub("", reply)
        return cut if cut != reply else None
    if failure == "window":
        match = _WINDOW.search(reply) if "answer(" in reply else None
        if match is None or float(match["start"]) >= float(match["end"]):
            return None
        return reply[: match.start()] + f"[{match['end']}, {match['start']}]" + reply[match.end() :]
    if failure == "speed":
        return _SPEED.sub("speed(3x)", reply, count=1) if _SPEED.search(reply) else None
    raise ConfigError(f"unknown failure {failure!r}; expected one of {FAILURES}")


def recovery_row(row: dict[str, Any], failure: str) -> dict[str, Any] | None:
    """``row`` as the env shows it after the teacher's reply failed by ``failure``.

    The turn count goes one on and the env's message for the failed reply (its parser's
    reason, as ``last_action_error`` shows it) follows the notes line; the frames, notes
    and the completion stay. ``None`` when the failure has no place in the reply, the
    env's parser would accept the failed reply, or the prompt lacks the two lines.
    """
    failed = failed_reply(_reply(row), failure)
    if failed is None:
        return None
    parsed = parse_text_action(PacingActionSet(), failed)
    if not isinstance(parsed, InvalidAction):
        return None
    feedback = f"Your last reply was invalid: {shown_error(parsed.reason or '')}\n"
    recovered = copy.deepcopy(row)
    slots = list(_text_slots(recovered))
    turns = [(holder, key) for holder, key in slots if _TURN.search(holder[key])]
    notes = [(holder, key) for holder, key in slots if _NOTES.search(holder[key])]
    if len(turns) != 1 or len(notes) != 1:
        return None
    holder, key = turns[0]
    holder[key] = _TURN.sub(lambda m: f"Turn {int(m['n']) + 1}.", holder[key], count=1)
    holder, key = notes[0]
    holder[key] = _NOTES.sub(lambda m: m[0] + feedback, holder[key], count=1)
    recovered["id"] = f"{row.get('id', '')}@r"
    return recovered


def _reply(row: dict[str, Any]) -> str:
    completion = row.get("completion") or []
    content = completion[-1].get("content") if completion else None
    return content if isinstance(content, str) else ""


def _text_slots(row: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """The user messages' texts: ``(holder, key)``, ``holder[key]`` a text."""
    slots: list[tuple[dict[str, Any], str]] = []
    for message in row.get("prompt") or []:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            slots.append((message, "content"))
        elif isinstance(content, list):
            slots += [(p, "text") for p in content if isinstance(p.get("text"), str)]
    return slots
