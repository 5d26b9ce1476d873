"""DAPO's ``explore_pace``: rollout turns decoded without the answers, scored under the full guide.

A policy that always answers at once never samples reading on, so DAPO has nothing to
reinforce (``experiments/pacing_suite/LOG.md``, issue 72's item 4). An explored turn
masks the answers where another action is legal, and is recorded under the turn's full
guide: scoring sees the decision as the policy would have made it.
"""

from __future__ import annotations

from typing import Any

import pytest

from policies.episode_settings import EpisodeSettings
from policies.training.cli import RULES
from policies.training.episodes import run_recorded_episode
from tests.backends.test_reply_guide import SpeedLovingChat
from video_env.errors import ConfigError
from video_env.synth.suites import load_suite

SMOKE = RULES["cpu-smoke"]()
ANSWER = '<action>answer("A")</action>'


class AnswerAtOnceChat(SpeedLovingChat):
    """A model that wants to answer "A" at once; given a guide, its first legal action."""

    name = "answer-at-once"
    wanted = ANSWER


def _episode(explore_pace: float, seed: int = 0) -> tuple[Any, AnswerAtOnceChat]:
    model = AnswerAtOnceChat()
    sample = next(s for s in load_suite("synth-tiny", limit=4) if s.options)
    settings = EpisodeSettings(rules=SMOKE, max_turns=32, guided=True)
    return run_recorded_episode(
        model, sample, settings, seed=seed, explore_pace=explore_pace
    ), model


def test_without_exploration_the_policy_answers_on_its_first_turn() -> None:
    run, model = _episode(0.0)
    assert len(run.turns) == 1 and run.record["ended_by"] == "answer"
    assert run.turns[0].guide is model.guides[0]


def test_explored_turns_read_on_and_are_recorded_under_the_full_guide() -> None:
    run, model = _episode(1.0)
    assert len(run.turns) > 1 and run.record["ended_by"] == "answer"
    for turn, decoded in zip(run.turns[:-1], model.guides[:-1], strict=True):
        assert decoded is not None and ANSWER not in decoded.closed  # masked for the model
        assert turn.guide is not None and ANSWER in turn.guide.closed  # scored with it
        assert "</action>" in turn.reply and "speed(" in turn.reply
    last = model.guides[-1]
    assert last is not None and ANSWER in last.closed  # only answering was legal: no mask


def test_a_share_of_turns_is_explored_drawn_from_the_episode_seed() -> None:
    lengths = {seed: len(_episode(0.5, seed)[0].turns) for seed in range(6)}
    assert len(set(lengths.values())) > 1  # some episodes read on longer than others
    assert lengths == {seed: len(_episode(0.5, seed)[0].turns) for seed in range(6)}


def test_exploring_the_pace_needs_a_guide_and_a_share() -> None:
    from policies.training.rl import DAPOConfig

    with pytest.raises(ConfigError, match="guided"):
        DAPOConfig(explore_pace=0.3)
    with pytest.raises(ConfigError, match=r"\[0, 1\]"):
        DAPOConfig(explore_pace=1.5).with_episode(guided=True)
    assert DAPOConfig(explore_pace=0.0).explore_pace == 0.0
