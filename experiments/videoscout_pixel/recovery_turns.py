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
the lab's ``sft --recovery-turns SHARE`` trains on them. A row whose user texts do
not hold exactly one turn line and one notes line (the policy's templates) is left
without one. The message is the lenient parser's (VideoScout's default, ``strict=False``).
The env never shows this prompt where it would end the episode instead (a turn at the
``max_turns`` cap, or no error allowance); such rows are few and are not singled out.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Sequence
from typing import Any

from policies.training.turn_rows import row_reply, text_slots
from video_env._seeding import stable_seed
from video_env.actions.pacing import PacingActionSet
from video_env.actions.types import InvalidAction
from video_env.envs.spaces import shown_error
from video_env.errors import ConfigError
from video_env.wrappers.text_actions import parse_text_action

__all__ = ["FAILURES", "check_failures", "failed_reply", "recovery_row", "with_recovery_turns"]

#: The failures a recovery turn follows, each made from the teacher's reply.
FAILURES = ("cut", "window", "speed")

#: The window line's turn count (``videoscout/window``) and the notes line
#: (``videoscout/memory``, ``videoscout/question``), after which the env's message goes.
_TURN = re.compile(r"^Turn (?P<n>\d+)\.", re.M)
_NOTES = re.compile(r"^Your memory: [^\n]*\n", re.M)
_ACTION = re.compile(r"<action>.*", re.S)  # from the first action tag on
_LAST_ACTION = re.compile(r"<action>(?!.*<action>).*", re.S)  # the last action tag on
_WINDOW = re.compile(r"\[\s*(?P<start>[\d.]+)\s*,\s*(?P<end>[\d.]+)\s*\]")
_SPEED = re.compile(r"speed\(\s*\d+x\s*\)")


def with_recovery_turns(
    rows: Iterable[dict[str, Any]],
    share: float,
    seed: int = 0,
    failures: Sequence[str] = FAILURES,
) -> list[dict[str, Any]]:
    """``rows``, a ``share`` of them each followed by its recovery turn.

    Args:
        rows: ``turns.jsonl`` rows.
        share: The fraction of rows drawn for one (0: none, 1: all), by a hash of the
            row's id and ``seed``; a drawn row gets one of the failures its reply has a
            place for (drawn by the same hash), none if it has none or its prompt lacks
            the template's lines.
        seed: Seed of the draws.
        failures: The failures drawn among (a subset of :data:`FAILURES`).

    Returns:
        The rows, each drawn one followed by its recovery turn (id ``ID@r``).

    Raises:
        ConfigError: For a share outside [0, 1], or no or unknown failures.
    """
    if not 0.0 <= share <= 1.0:
        raise ConfigError(f"the share of recovery turns must be in [0, 1], got {share}")
    check_failures(failures)
    out: list[dict[str, Any]] = []
    for row in rows:
        out.append(row)
        draw = stable_seed("recovery-turns", seed, str(row.get("id", "")))
        if (draw % 10_000) / 10_000 >= share:
            continue
        made = [r for f in failures if (r := recovery_row(row, f)) is not None]
        out += [made[(draw // 10_000) % len(made)]] if made else []
    return out


def check_failures(failures: Sequence[str]) -> None:
    """Raise :class:`ConfigError` unless ``failures`` is a non-empty subset of :data:`FAILURES`."""
    unknown = [f for f in failures if f not in FAILURES]
    if unknown or not failures:
        raise ConfigError(
            f"recovery failures must be one or more of {', '.join(FAILURES)}; got {list(failures)}"
        )


def failed_reply(reply: str, failure: str) -> str | None:
    """The teacher's ``reply`` with ``failure`` made in it.

    Args:
        reply: The teacher's reply.
        failure: ``cut``: the action is gone (a reply stopped short); ``window``: the
            answer's evidence window reversed; ``speed``: a speed the rules lack
            (``speed(3x)``). The last two are made in the reply's last action tag, never
            in its thought or notes.

    Returns:
        The failed reply, or ``None`` where the reply has no place for the failure.

    Raises:
        ConfigError: For an unknown failure.
    """
    if failure not in FAILURES:
        raise ConfigError(f"unknown failure {failure!r}; expected one of {FAILURES}")
    if failure == "cut":
        cut = _ACTION.sub("", reply)
        return cut if cut != reply else None
    action = _LAST_ACTION.search(reply)
    if action is None:
        return None
    head, tail = reply[: action.start()], action[0]
    if failure == "window":
        match = _WINDOW.search(tail) if "answer(" in tail else None
        if match is None or float(match["start"]) >= float(match["end"]):
            return None
        return (
            head
            + tail[: match.start()]
            + f"[{match['end']}, {match['start']}]"
            + tail[match.end() :]
        )
    return head + _SPEED.sub("speed(3x)", tail, count=1) if _SPEED.search(tail) else None


def recovery_row(row: dict[str, Any], failure: str) -> dict[str, Any] | None:
    """``row`` as the env shows it after the teacher's reply failed by ``failure``.

    Args:
        row: A ``turns.jsonl`` row (a VideoScout turn).
        failure: One of :data:`FAILURES` (see :func:`failed_reply`).

    Returns:
        A copy whose turn count is one on and whose notes line is followed by the env's
        message for the failed reply (its parser's reason, as ``last_action_error``
        shows it), the frames, notes and completion kept (id ``ID@r``); ``None`` when the
        reply has no place for the failure, the env's parser would accept the failed
        reply, or the user texts lack exactly one turn line and one notes line.
    """
    failed = failed_reply(row_reply(row) or "", failure)
    if failed is None:
        return None
    parsed = parse_text_action(PacingActionSet(), failed)
    if not isinstance(parsed, InvalidAction):
        return None
    reason = parsed.reason or "invalid action (no reason given)"  # as the env says it
    feedback = f"Your last reply was invalid: {shown_error(reason)}\n"
    recovered = copy.deepcopy(row)
    slots = list(text_slots(recovered, role="user"))
    turns = [(h, k) for h, k in slots for _ in _TURN.finditer(h[k])]
    notes = [(h, k) for h, k in slots for _ in _NOTES.finditer(h[k])]
    if len(turns) != 1 or len(notes) != 1:
        return None
    holder, key = turns[0]
    holder[key] = _TURN.sub(lambda m: f"Turn {int(m['n']) + 1}.", holder[key], count=1)
    holder, key = notes[0]
    holder[key] = _NOTES.sub(lambda m: m[0] + feedback, holder[key], count=1)
    recovered["id"] = f"{row.get('id', '')}@r"
    return recovered
