"""The text action parsers: their grammar, linear time, and bounded numbers."""

import contextlib
import time

import pytest

from video_env.actions import (
    ActionParseError,
    AnswerAction,
    ClipQueryActionSet,
    PacingActionSet,
    SpeedAction,
    ZoomActionSet,
)
from video_env.actions.base import ActionSet
from video_env.actions.parsing import find_calls, find_json_action
from video_env.types import Interval

NAMES = ("speed", "rewatch", "answer")
SETS: list[ActionSet] = [PacingActionSet(), ZoomActionSet(), ClipQueryActionSet()]  # type: ignore[type-arg]


def names_of(text: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(c.name, c.args) for c in find_calls(text, NAMES)]


def test_calls_in_prose_and_nested() -> None:
    assert names_of("I don't know; Speed (4x).") == [("speed", ("4x",))]
    # an unclosed call does not hide the calls inside or after it
    assert names_of("rewatch(3 then speed(2)") == [("speed", ("2",))]
    assert names_of("answer(B, [10, 20) speed(2)") == [("speed", ("2",))]
    assert names_of('answer("B, [1, 2]) speed(2)') == [("speed", ("2",))]
    # a name inside a quoted argument is text, not a call
    assert names_of('answer("use speed(2)", [1, 2])') == [("answer", ('"use speed(2)"', "[1, 2]"))]
    assert names_of("answer(“B”, [1,2])") == [("answer", ("“B”", "[1,2]"))]


def test_json_actions() -> None:
    fenced = '```json\n{"action": "answer", "answer": "B", "window": [1, 2]}\n```'
    assert find_json_action(fenced) == {"action": "answer", "answer": "B", "window": [1, 2]}
    assert find_json_action('{ prose {"action": "speed", "speed": 2} }') == {
        "action": "speed",
        "speed": 2,
    }
    assert find_json_action('{"reply": {"action": "speed"}} {"action": "answer"}') == {
        "action": "answer"
    }
    assert find_json_action('{"a": "x\\"}", "action": 1}') == {"a": 'x"}', "action": 1}
    assert find_json_action('{"action": ' + "[" * 5000 + "]" * 5000 + "}") is None


@pytest.mark.parametrize(
    "text",
    [
        "rewatch(" + "9" * 5000 + ")",
        "speed(" + "9" * 5000 + "x)",
        'answer("B", [' + "9" * 5000 + ", 1])",
        "evaluate([0, " + "1" * 5000 + "])",
        "evaluate([1" + " " * 5000 + "x, 2])",
    ],
)
def test_huge_numbers_are_parse_errors(text: str) -> None:
    """No 4300-digit ValueError, no regex backtracking over long arguments."""
    for action_set in SETS:
        with pytest.raises(ActionParseError):
            action_set.parse(text)


def test_think_act_split_and_well_formed() -> None:
    pacing = PacingActionSet()
    good = " <THINK>x</Think>\n<memory> m </memory> <action> speed(2x) </action>\n"
    assert pacing.parse(good) == SpeedAction(2, "m")
    assert pacing.parse(good).well_formed
    # read leniently (the action runs), but not well-formed
    for text in [
        "<think>a</think><memory>m</memory><action>speed(2x)",  # action tag not closed
        "<think>a<memory>m</memory><action>speed(2x)</action>",  # think not closed
        "<memory>m</memory><action>speed(2x)</action>",  # no think
        "<think>a</think><action>speed(2x)</action>",  # no memory
        "<think>a</think><memory>m</memory><action>ok: speed(2x)</action>",  # prose
        "<think>a</think><memory>m</memory><action>speed(2x) speed(4x)</action>",  # two
        "speed(2x)",
        '{"action": "speed", "speed": 2}',
    ]:
        action = pacing.parse(text)
        assert isinstance(action, SpeedAction), text
        assert not action.well_formed, text
    answer = pacing.parse('<think>t</think><memory>m</memory><action>answer("B", [1, 2])</action>')
    assert answer == AnswerAction("B", Interval(1, 2), "m")
    assert answer.well_formed


# The adversarial replies, scaled to 1 MB.
ADVERSARIAL = {  # (prefix, unit repeated after it)
    "braces": ("", "{"),
    "calls": ("", "speed("),
    "think-act blocks": ("<think>", "</think><memory></memory><action></action>"),
    "think text": ("<think>", "lorem ipsum "),
    "nested json": ("", '{"action": '),
    "brackets in a call": ("", "answer(" + "()" * 10),
    "quotes in a call": ("", 'evaluate([0, "'),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(ADVERSARIAL))
def test_one_megabyte_of_adversarial_text_parses_fast(kind: str) -> None:
    prefix, unit = ADVERSARIAL[kind]
    text = (prefix + unit * (2**20 // len(unit) + 1))[: 2**20]
    for action_set in SETS:
        start = time.process_time()
        with contextlib.suppress(ActionParseError):
            action_set.parse(text)
        elapsed = time.process_time() - start
        # linear parsing takes well under a second; the old parsers did not return in 90 s
        assert elapsed < 2.0, f"{type(action_set).__name__} took {elapsed:.1f} s on {kind}"
