"""Nothing an agent sends escapes ``step``: malformed text and dicts are invalid actions."""

from typing import Any

import numpy as np
import pytest

from video_env.envs import ClipQueryEnv, PacingEnv, ZoomEnv
from video_env.envs.pacing_rules import PacingRules
from video_env.wrappers import TextActions

ENVS = {"pacing": PacingEnv, "zoom": ZoomEnv, "clip_query": ClipQueryEnv}


def make(kind: str, **kw: Any) -> Any:
    env = ENVS[kind]("synth-tiny", max_invalid_actions=100, **kw)
    env.reset(seed=0)
    return env


def assert_invalid(env: Any, action: Any, message: str = "") -> None:
    invalid = env.unwrapped._episode.invalid_actions
    _, reward, terminated, _, info = env.step(action)
    assert info["last_action_error"], action
    assert message in info["last_action_error"]
    assert info["invalid_actions"] == invalid + 1
    assert reward < 0
    assert not terminated


BAD_TEXT = [
    '{"action": ' * 3000 + "1" + "}" * 3000,  # deep JSON: RecursionError today
    "[" * 8000 + "]" * 8000,
    "rewatch(" + "9" * 5000 + ")",  # int() over 4300 digits: ValueError today
    "query(" + "9" * 5000 + ', "x")',
    "speed(" + "9" * 5000 + "x)",
]


@pytest.mark.parametrize("kind", sorted(ENVS))
def test_malformed_text_is_an_invalid_action(kind: str) -> None:
    env = TextActions(make(kind))
    for text in BAD_TEXT:
        assert_invalid(env, text)


@pytest.mark.parametrize("kind", sorted(ENVS))
def test_replies_over_max_length_are_invalid_and_not_parsed(kind: str) -> None:
    env = TextActions(make(kind), max_length=1000)
    assert env.max_length == 1000
    assert_invalid(env, "x" * 991 + " answer(A)", "1001 characters")
    assert_invalid(env, "{" * 2**20, "at most 1000")


BAD_DICTS: dict[str, list[dict[str, Any]]] = {
    "pacing": [
        {},
        {"kind": 2},
        {"kind": float("nan")},
        {"kind": float("inf")},
        {"kind": "speed"},
        {"kind": 0, "speed": float("inf")},
        {"kind": 2, "answer": "A", "has_window": 1, "window": [0.1, 0.2, 0.3]},
        {"kind": 1, "chunk": float("nan")},
    ],
    "zoom": [
        {},
        {"kind": 0},
        {"kind": float("nan")},
        {"kind": 0, "windows": [[0, 0.5]], "n_windows": float("inf")},
        {"kind": 1, "answer": "A", "has_window": 1, "window": [0.1]},
    ],
    "clip_query": [
        {},
        {"kind": 0},
        {"kind": float("-inf")},
        {"kind": 0, "n_queries": 1, "segments": [float("nan")], "texts": ("x",)},
        {"kind": 1, "answer": "A", "has_window": 1, "window": np.zeros(3)},
    ],
}


@pytest.mark.parametrize("kind", sorted(ENVS))
def test_malformed_dict_actions_are_invalid(kind: str) -> None:
    env = make(kind)
    for action in BAD_DICTS[kind]:
        assert_invalid(env, action, "malformed action")


def test_allowance_still_ends_the_episode() -> None:
    env = PacingEnv("synth-tiny", max_invalid_actions=1)
    env.reset(seed=0)
    env.step({})
    *_, truncated, info = env.step({"kind": float("nan")})
    assert truncated
    assert info["episode"]["ended_by"] == "invalid_actions"


@pytest.mark.parametrize("index", [-1, 10**6, 1.0, True, "0"])
def test_reset_rejects_bad_indices(index: object) -> None:
    env = PacingEnv("synth-tiny")
    with pytest.raises((IndexError, TypeError), match="options\\['index'\\]"):
        env.reset(seed=0, options={"index": index})
    env.reset(seed=0, options={"index": np.int64(len(env.samples) - 1)})


# -- VideoScout's format reward ------------------------------------------------------------

THINK_ACT = "<think>looking</think><memory>{memory}</memory><action>{action}</action>"


def fmt_after(*replies: str, memory_words: int = 200) -> float:
    env = TextActions(PacingEnv("synth-tiny", rules=PacingRules(memory_words=memory_words)))
    env.reset(seed=0)
    for reply in replies:
        _, _, terminated, truncated, info = env.step(reply)
        assert info["last_action_error"] == "", reply  # lenient text still executes
    assert terminated
    return float(info["episode"]["reward_parts"]["fmt"])


def test_format_reward_only_for_well_formed_think_act() -> None:
    speed = THINK_ACT.format(memory="notes", action="speed(2x)")
    answer = THINK_ACT.format(memory="done", action='answer("A")')
    assert fmt_after(speed, answer) == 0.3
    # each turn below runs its action, but costs the episode its r_fmt
    assert fmt_after(speed.removesuffix("</action>"), answer) == 0.0  # tag not closed
    assert fmt_after("speed(2x)", answer) == 0.0  # no tags
    assert fmt_after("Let me go faster: speed(2x)", answer) == 0.0  # prose
    assert fmt_after(speed, answer.replace("<think>looking</think>", "")) == 0.0
    assert fmt_after(THINK_ACT.format(memory="m", action="speed(2x) speed(4x)"), answer) == 0.0
    assert fmt_after(speed, '{"action": "answer", "answer": "A"}') == 0.0
    # memory over its word budget
    long_memory = THINK_ACT.format(memory="a b c d", action="speed(2x)")
    assert fmt_after(long_memory, answer, memory_words=3) == 0.0
    assert fmt_after(long_memory, answer, memory_words=4) == 0.3
