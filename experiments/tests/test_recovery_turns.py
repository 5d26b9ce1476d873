"""Recovery turns of distilled data (the lab's ``sft --recovery-turns``)."""

from __future__ import annotations

from typing import Any

import pytest

from experiments.videoscout_pixel.recovery_turns import (
    failed_reply,
    recovery_row,
    with_recovery_turns,
)
from experiments.videoscout_pixel.sft_extension import PixelTurnExtension
from policies.training.cli import RULES
from policies.training.distill import turn_row
from policies.training.episodes import Turn
from policies.videoscout.prompt import PromptLayout, VideoScoutPrompt
from video_env.actions.pacing import PacingActionSet
from video_env.actions.types import SpeedAction
from video_env.envs.pacing import PacingEnv
from video_env.errors import ConfigError
from video_env.synth.suites import load_suite
from video_env.wrappers.text_actions import parse_text_action

SKIM = "<think>Beach. Skim.</think><memory>Seen: beach.</memory><action>speed(2x)</action>"
ANSWER = (
    '<think>D (trophy).</think><memory>Seen: beach.</memory><action>answer("D", [0, 9])</action>'
)


def _row(policy: VideoScoutPrompt, observation: dict[str, Any], reply: str) -> dict[str, Any]:
    messages = policy.messages(observation)
    frames = sum(len(p.times) for m in messages for p in m["content"] if hasattr(p, "times"))
    return turn_row(Turn(messages, reply, "stop"), [f"f{i}.png" for i in range(frames)], "q#t1")


LAYOUTS = [(q, note) for q in (True, False) for note in ("window", "last")]
CASES = [("first", SKIM, "cut"), ("first", SKIM, "speed"), ("first", ANSWER, "window"),
         ("last", ANSWER, "cut"), ("last", ANSWER, "window")]  # fmt: skip


@pytest.mark.parametrize(("question_first", "end_note"), LAYOUTS)
@pytest.mark.parametrize(("state", "reply", "failure"), CASES)
def test_a_recovery_turn_is_the_prompt_the_env_shows_after_the_failed_reply(
    state: str, reply: str, failure: str, question_first: bool, end_note: str
) -> None:
    (sample,) = load_suite("synth-tiny", limit=1)
    rules = RULES["cpu-smoke"]()
    policy = VideoScoutPrompt(rules, PromptLayout(end_note, question_first))
    env = PacingEnv([sample], **policy.env_kwargs)
    observation, _ = env.reset(seed=0, options={"sample": sample})
    while state == "last" and float(observation["progress"][0]) < 1.0:  # with notes, end note
        observation, *_ = env.step(SpeedAction(4, "Seen: beach."))
    row = _row(policy, observation, reply)
    if state == "last":
        assert "only answer is left" in str(row["prompt"]) and "Seen: beach." in str(row)
    failed = failed_reply(reply, failure)
    assert failed is not None and failed != reply
    after, *_ = env.step(parse_text_action(PacingActionSet(), failed))
    assert after["last_action_error"], "the env refused the failed reply"
    recovered = recovery_row(row, failure)
    assert recovered is not None
    assert recovered["prompt"] == _row(policy, after, reply)["prompt"]  # word for word
    assert recovered["completion"] == row["completion"]  # the teacher's reply, unchanged
    assert recovered["images"] == row["images"] and recovered["id"] == "q#t1@r"
    assert "invalid" not in str(row["prompt"])  # the original is not touched
    env.close()


def test_failures_go_only_where_the_reply_has_their_place() -> None:
    assert failed_reply(SKIM, "window") is None  # no answer window to reverse
    assert failed_reply(ANSWER, "speed") is None
    assert failed_reply(ANSWER, "window") == ANSWER.replace("[0, 9]", "[9, 0]")
    assert failed_reply("<think>x</think>", "cut") is None  # nothing to cut
    with pytest.raises(ConfigError, match="unknown failure"):
        failed_reply(SKIM, "typo")
    # only the action is failed, never a window or speed the thought mentions
    thought = "<think>At [10, 20] s; speed(1x) there.</think><memory>m</memory>"
    answer = thought + '<action>answer("cup", [10, 20])</action>'
    assert failed_reply(answer, "window") == thought + '<action>answer("cup", [20, 10])</action>'
    skim = thought + "<action>speed(2x)</action>"
    assert failed_reply(skim, "speed") == thought + "<action>speed(3x)</action>"


def test_a_share_of_rows_gets_a_recovery_turn_chosen_by_id() -> None:
    def row(i: int) -> dict[str, Any]:
        text = f"Turn {i}. Now at 1x.\nYour memory: (empty)\n"
        return {
            "id": f"q{i}#t1",
            "prompt": [{"role": "user", "content": [{"type": "text", "text": text}]}],
            "completion": [{"role": "assistant", "content": SKIM}],
        }

    rows = [row(i) for i in range(200)]
    half = with_recovery_turns(rows, 0.5)
    added = [r for r in half if r["id"].endswith("@r")]
    assert 70 < len(added) < 130
    assert half == with_recovery_turns(rows, 0.5)  # the same rows each time
    assert with_recovery_turns(rows, 0.0) == rows
    assert len(with_recovery_turns(rows, 1.0)) == 400
    assert {r["id"][:-2] for r in added} < {r["id"] for r in rows}
    text = added[0]["prompt"][0]["content"][0]["text"]
    assert "\nYour memory: (empty)\nYour last reply was invalid: " in text
    assert with_recovery_turns(rows, 0.5, seed=1) != half  # the seed draws other rows
    chosen = {r["prompt"][0]["content"][0]["text"].split("invalid: ")[1][:12] for r in added}
    assert len(chosen) == 2  # both failures a skim has a place for (cut, speed) are drawn
    without_notes = {**rows[0], "prompt": [{"role": "user", "content": "Turn 1."}]}
    assert recovery_row(without_notes, "cut") is None
    with pytest.raises(ConfigError, match="share"):
        with_recovery_turns(rows, 1.5)


def test_recovery_turns_draw_only_among_the_failures_asked_for() -> None:
    rows = [
        {
            "id": f"q{i}#t1",
            "prompt": [{"role": "user", "content": f"Turn 1. At 1x.\nYour memory: (empty)\n{i}"}],
            "completion": [{"role": "assistant", "content": ANSWER}],
        }
        for i in range(60)
    ]

    def messages(failures: tuple[str, ...]) -> list[str]:
        drawn = with_recovery_turns(rows, 1.0, failures=failures)
        return [r["prompt"][0]["content"] for r in drawn if r["id"].endswith("@r")]

    every = messages(("cut", "window", "speed"))
    assert any("after its end" in m for m in every)  # an answer's window can be reversed
    no_window = messages(("cut", "speed"))
    assert len(no_window) == 60  # an answer has no speed to break: each one is cut
    assert not any("after its end" in m for m in no_window)
    assert set(no_window) == {recovery_row(r, "cut")["prompt"][0]["content"] for r in rows}  # type: ignore[index]
    with pytest.raises(ConfigError, match="recovery failures"):
        messages(("cut", "typo"))
    with pytest.raises(ConfigError, match="recovery failures"):
        messages(())
    with pytest.raises(ConfigError, match="recovery failures"):
        PixelTurnExtension(recovery_failures=("window", "typo"))
