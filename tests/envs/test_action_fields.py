"""Every field of every action, wrong-typed or oversized: never an exception from ``step``.

An action dataclass either refuses a wrong type at construction (``TypeError``, as
documented) or the env reports an invalid action; an ``action_space`` dict with any value
in any key is an invalid action or a valid one. Run with ``--hypothesis-show-statistics``
for the number of cases.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from video_env.actions import (
    AnswerAction,
    EvaluateAction,
    InvalidAction,
    QueryAction,
    RewatchAction,
    SegmentQuery,
    SpeedAction,
)
from video_env.envs import ENV_CLASSES, PacingEnv
from video_env.types import Interval


def nested(depth: int) -> list[Any]:
    value: list[Any] = [1]
    for _ in range(depth - 1):
        value = [value]
    return value


DEEP = nested(5000)
INTERVALS = st.builds(
    lambda a, b: Interval(min(a, b), max(a, b)),
    st.floats(0, 400, allow_nan=False),
    st.floats(0, 400, allow_nan=False),
)
#: Anything a caller, a learned policy or a JSON file might put in a field.
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.just(10**5000),
    st.floats(),
    st.text(max_size=12),
    st.just("x" * 20_000),
    st.just(DEEP),
    st.just(np.zeros((3, 2))),
    st.just(np.zeros(10**5)),
    st.integers(-3, 8).map(np.int64),
    st.floats(0, 1).map(np.float32),
    INTERVALS,
    st.lists(INTERVALS, max_size=3),
    st.lists(st.integers(-2, 8), max_size=3),
    st.just((Interval(0, 1),) * 1000),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.just(object()),
)
SEGMENT_QUERIES = st.builds(SegmentQuery, st.integers(-1, 8), st.text(max_size=20))
TEXT = st.one_of(st.sampled_from(["A", "B", "a clock", ""]), JUNK)
MEMORY = st.one_of(st.none(), st.text(max_size=30), JUNK)
WINDOW = st.one_of(st.none(), INTERVALS, JUNK)

#: Per action type: the strategy of its constructor's arguments (good values and junk).
FIELDS: dict[str, Any] = {
    "answer": st.tuples(TEXT, WINDOW, MEMORY, st.one_of(st.booleans(), JUNK)),
    "speed": st.tuples(st.one_of(st.sampled_from([1, 2, 4]), JUNK), MEMORY),
    "rewatch": st.tuples(st.one_of(st.integers(0, 6), JUNK), MEMORY),
    "evaluate": st.tuples(st.one_of(st.lists(INTERVALS, max_size=4), JUNK)),
    "query": st.tuples(st.one_of(st.lists(SEGMENT_QUERIES, max_size=4), JUNK)),
    "segment_query": st.tuples(st.one_of(st.integers(-1, 8), JUNK), TEXT),
    "invalid": st.tuples(TEXT, TEXT),
}
BUILD: dict[str, Any] = {
    "answer": AnswerAction,
    "speed": SpeedAction,
    "rewatch": RewatchAction,
    "evaluate": EvaluateAction,
    "query": QueryAction,
    "segment_query": lambda s, t: QueryAction((SegmentQuery(s, t),)),
    "invalid": InvalidAction,
}
ENVS_FOR = {
    "answer": ("pacing", "zoom", "clip_query"),
    "speed": ("pacing",),
    "rewatch": ("pacing",),
    "evaluate": ("zoom",),
    "query": ("clip_query",),
    "segment_query": ("clip_query",),
    "invalid": ("pacing", "zoom", "clip_query"),
}
_ENVS: dict[str, Any] = {}


def env_for(kind: str) -> Any:
    """One env per kind, reused across examples (reset whenever its episode ended)."""
    if kind not in _ENVS:
        _ENVS[kind] = ENV_CLASSES[kind]("synth-tiny", max_invalid_actions=10**6)
        _ENVS[kind].reset(seed=0)
    env = _ENVS[kind]
    if env._episode.done:
        env.reset(seed=1)
    return env


def step_survives(env: Any, action: Any) -> None:
    """``step`` returns; an invalid action says why in ``last_action_error``."""
    invalid = env._episode.invalid_actions
    _, reward, _, _, info = env.step(action)
    assert isinstance(reward, float)
    if info["invalid_actions"] > invalid:
        assert info["last_action_error"]
        assert len(info["last_action_error"]) <= 1024
        assert len(env._episode.steps[-1].action) <= 1024


CASES = [(action, kind) for action, kinds in ENVS_FOR.items() for kind in kinds]


@pytest.mark.parametrize(("action_type", "kind"), CASES)
@settings(max_examples=120, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_action_fields_never_escape_step(action_type: str, kind: str, data: Any) -> None:
    args = data.draw(FIELDS[action_type])
    try:
        action = BUILD[action_type](*args)
    except TypeError as exc:  # the documented refusal at construction, naming the field
        message = str(exc)
    else:
        step_survives(env_for(kind), action)
        return
    assert " must be " in message


def space_dict(kind: str, data: Any) -> dict[str, Any]:
    """A sampled ``action_space`` dict with some keys replaced by junk or removed."""
    env = env_for(kind)
    env.action_space.seed(data.draw(st.integers(0, 2**16)))
    action = dict(env.action_space.sample())
    keys = sorted(action)
    for key in data.draw(st.lists(st.sampled_from(keys), max_size=3, unique=True)):
        if data.draw(st.integers(0, 5)) == 0:
            del action[key]
        else:
            action[key] = data.draw(JUNK)
    return action


@pytest.mark.parametrize("kind", sorted(ENV_CLASSES))
@settings(max_examples=300, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_dict_actions_never_escape_step(kind: str, data: Any) -> None:
    step_survives(env_for(kind), space_dict(kind, data))


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: AnswerAction("A", window=1.5), "window"),  # type: ignore[arg-type]
        (lambda: SpeedAction(2, memory=5), "memory"),  # type: ignore[arg-type]
        (lambda: RewatchAction(chunk=np.zeros((3, 2))), "chunk"),  # type: ignore[arg-type]
        (lambda: RewatchAction(chunk=DEEP), "chunk"),  # type: ignore[arg-type]
        (lambda: EvaluateAction(windows=DEEP), "windows"),  # type: ignore[arg-type]
        (lambda: SegmentQuery("1", "a"), "segment"),  # type: ignore[arg-type]
    ],
)
def test_the_issue_cases_are_refused_at_construction(build: Any, field: str) -> None:
    with pytest.raises(TypeError, match=field):
        build()


@pytest.mark.parametrize("kind", sorted(ENV_CLASSES))
def test_a_deep_dict_value_is_an_invalid_action(kind: str) -> None:
    env = ENV_CLASSES[kind]("synth-tiny")
    env.reset(seed=0)
    action = dict(env.action_space.sample())
    action["kind"] = 0  # the kind whose field is filled (an answer would ignore it)
    key = {"pacing": "memory", "zoom": "windows", "clip_query": "texts", "tools": "arguments"}[kind]
    action[key] = DEEP
    _, _, _, _, info = env.step(action)
    assert info["invalid_actions"] == 1 and info["last_action_error"]


def test_an_action_built_around_its_constructor_is_invalid() -> None:
    env = PacingEnv("synth-tiny")
    env.reset(seed=0)
    action = SpeedAction(2)
    object.__setattr__(action, "memory", DEEP)
    _, _, _, _, info = env.step(action)
    assert "memory must be a str" in info["last_action_error"]
