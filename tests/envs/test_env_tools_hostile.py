"""The Tools env against hostile and unlucky replies: each a case an adversarial probe found.

A reasoning trace naming a tag, numbers too large for a float, many small spans, calls
written by :func:`format_call`, over-long evidence, reversed pool indices, bad preset
overrides, several search ranges, a video-env style JSON call and a flood of unclosed
``<think>`` tags: each gets the system's reading or a clear error, never a crash.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from shared_fixtures import quiet_step as step
from shared_fixtures import tools_env as make

from video_env.actions.parsing import ActionParseError
from video_env.actions.reply_text import without_think
from video_env.actions.tools import ToolsActionSet, format_call
from video_env.actions.types import ToolCall
from video_env.envs.tool_frames import spread
from video_env.envs.tool_presets import PRESETS
from video_env.envs.tool_rules import ToolSpec
from video_env.errors import ConfigError
from video_env.wrappers.text_actions import parse_text_action


@pytest.mark.parametrize(
    ("preset", "reply", "tool"),
    [
        ("longvt", "<think>Put it in the <answer> tag: B?</think><answer>D</answer>", "answer"),
        (
            "framethinker",
            "<think>I will use an <action> to look.</think>"
            "<action>choose frames between 10 and 3000</action>",
            "choose frames between",
        ),
        (
            "videozoomer",
            '<think>Zoom with <video_zoom> first.</think><video_zoom>{"segment": [4.0, 6.0], '
            '"fps": 2}</video_zoom>',
            "video_zoom",
        ),
        (
            "timesearch-r",
            "<think>I should use the <tool_call> tool.</think><tool_call>"
            '{"name": "seek_video_frames", "arguments": {"query": "a lantern"}}</tool_call>',
            "seek_video_frames",
        ),
    ],
)
def test_a_tag_named_in_the_reasoning_is_no_call(preset: str, reply: str, tool: str) -> None:
    env = make(preset)
    call = parse_text_action(env.text_action_set(), reply)
    assert isinstance(call, ToolCall) and call.name == tool
    if tool == "answer":
        assert call.arguments == {"answer": "D"}
    _, _, terminated, _, info = step(env, call)
    assert not info.get("last_action_error"), info.get("last_action_error")
    assert terminated == (tool == "answer")


def test_an_opening_tag_in_prose_never_swallows_the_call_after_it() -> None:
    actions = ToolsActionSet(PRESETS["longvt"])
    assert actions.parse("I'll write it in the <answer> tag. <answer>D</answer>").arguments == {
        "answer": "D"
    }


@pytest.mark.parametrize(
    ("preset", "call"),
    [
        ("longvt", ToolCall("crop_video", {"start_time": 10**400, "end_time": 40})),
        ("timesearch-r", ToolCall("seek_video_frames", {"query": "x", "num_frames": 10**400})),
        ("videozoomer", ToolCall("video_zoom", {"segment": [0, 100], "fps": 1e307})),
    ],
)
def test_numbers_too_large_for_a_float_are_refused_not_raised(preset: str, call: ToolCall) -> None:
    env = make(preset)
    _, _, terminated, _, info = step(env, call)  # no OverflowError
    if PRESETS[preset].on_invalid != "clamp":
        assert info["last_action_error"], "a huge value must be an invalid action"
    assert not terminated


def test_many_small_spans_never_take_more_frames_than_the_rule_allows() -> None:
    env = make("videozoomer")
    spans = [[0, 15]] + [[20 + i, 20.01 + i] for i in range(15)]
    obs, *_ = step(env, ToolCall("video_zoom", {"segment": spans, "fps": 1}))
    assert int(obs["results"][-1]["n_frames"][0]) <= 16
    env = make("dvd")
    ranges = [[0, 150]] + [[151 + i * 0.5, 151.2 + i * 0.5] for i in range(15)]
    call = ToolCall("frame_inspect_tool", {"question": "what?", "time_ranges_hhmmss": ranges})
    *_, info = step(env, call)
    assert not info.get("last_action_error") and 0 < info["step_cost"]["frames"] <= 50


def test_spread_splits_a_count_exactly_in_proportion() -> None:
    assert spread(16, [15.0] + [0.01] * 15) == [16] + [0] * 15
    assert spread(10, [1.0, 1.0, 2.0]) == [3, 2, 5]  # a tie goes to the earlier weight
    assert sum(spread(7, [0.0, 0.0])) == 7


@pytest.mark.parametrize(
    ("preset", "name", "arguments"),
    [
        ("falconeye", "answer", {"window": [10, 30], "answer": "B"}),
        ("videoagent", "query", {"description": "a red car", "start": 0, "end": 60}),
        ("falconeye", "answer", {"answer": 'café, "B"\nand more'}),
    ],
)
def test_format_call_writes_what_the_parser_reads_back(
    preset: str, name: str, arguments: dict[str, Any]
) -> None:
    actions = ToolsActionSet(PRESETS[preset])
    call = actions.parse(format_call(PRESETS[preset], name, arguments))
    assert call.name == name and call.arguments == arguments


def test_more_evidence_ranges_than_a_call_takes_is_an_error_not_a_cut() -> None:
    env = make("falconeye")
    window = [[0, 1]] * 16 + [[150, 160]]
    _, _, terminated, _, info = step(env, ToolCall("answer", {"answer": "D", "window": window}))
    assert not terminated and "at most 16" in info["last_action_error"]


def test_reversed_pool_indices_are_reported_in_indices() -> None:
    env = make("video-mtr")
    *_, info = step(env, ToolCall("retrieve", {"start": 30, "end": 10}))
    assert "start_idx=30, end_idx=10, max_frame_idx=63" in info["last_action_error"]


@pytest.mark.parametrize(
    "overrides",
    [
        {"grid_fps": 0},
        {"grid_fps": float("nan")},
        {"max_candidates": -5},
        {"pool": -4},
        {"max_turns": "5"},
        {"max_turns": float("inf")},
        {"max_turns": True},
        {"preview": "none"},
        {"index_clip_s": 1e-6},
    ],
)
def test_bad_preset_overrides_are_config_errors(overrides: dict[str, Any]) -> None:
    preset = {"grid_fps": "timesearch-r", "max_candidates": "timesearch-r", "pool": "video-mtr"}
    name = preset.get(next(iter(overrides)), "dvd")
    with pytest.raises(ConfigError):
        PRESETS[name].with_overrides(**overrides)


def test_a_search_over_several_ranges_looks_inside_them_only() -> None:
    base = PRESETS["timesearch-r"]
    search = next(s for s in base.tools if s.tool == "search")
    ranged = ToolSpec(
        "search_ranges", "search", {"query": "query", "ranges": "spans", "num_frames": "n"},
        required=("query", "ranges"), frames=search.frames, select="top",
    )  # fmt: skip
    preset = base.with_overrides(name="ranges", tools=(ranged, base.answer_tool))
    for ranges in ([[10, 20], [100, 110]], [[100, 110], [10, 20]]):
        env = make(preset)
        call = ToolCall("search_ranges", {"query": "a lantern", "ranges": ranges, "num_frames": 4})
        *_, info = step(env, call)
        assert not info.get("last_action_error"), info.get("last_action_error")
        batch = env.results[-1].batch
        assert batch is not None and len(batch.times) == 4
        assert all(10 <= t <= 20 or 100 <= t <= 110 for t in batch.times)


def test_a_video_env_style_json_call_keeps_its_arguments() -> None:
    call = ToolsActionSet(PRESETS["dvd"]).parse('{"action": "finish", "answer": "D"}')
    assert call == ToolCall("finish", {"answer": "D"})


def test_many_unclosed_think_tags_parse_in_linear_time() -> None:
    reply = "<think>" * 40_000 + '{"name": "finish", "arguments": {"answer": "D"}}'
    start = time.perf_counter()
    assert ToolsActionSet(PRESETS["dvd"]).parse(reply).name == "finish"
    assert time.perf_counter() - start < 2.0  # quadratic took minutes at this size
    assert without_think("a<think>b</think>c<think>d") == "ac<think>d"
    with pytest.raises(ActionParseError):
        ToolsActionSet(PRESETS["longvt"]).parse("<think><answer>D</answer></think>")


@pytest.mark.parametrize(
    ("preset", "reply"),
    [
        ("dvd", '{"name": "finish", "arguments": {"answer": "B \\ud83d"}}'),
        ("longvt", "\ud800 <answer>B \ud83d</answer>"),
    ],
)
def test_half_a_surrogate_pair_is_read_as_a_replacement_character(preset: str, reply: str) -> None:
    import json

    env = make(preset)
    call = parse_text_action(env.text_action_set(), reply)
    assert call.arguments["answer"] == "B \ufffd"
    *_, info = step(env, call)
    json.dumps(info["episode"], ensure_ascii=False).encode("utf-8")  # the record is writable


@pytest.mark.parametrize("blank", ["\u200b", "\x00", " \n", "\ufeff"])
def test_an_answer_that_shows_nothing_is_empty(blank: str) -> None:
    env = make("longvt")
    *_, terminated, _, info = step(env, parse_text_action(env.text_action_set(),
                                                          f"<answer>{blank}</answer>"))  # fmt: skip
    assert not terminated and "empty" in info["last_action_error"]
    env = make("dvd")
    call = ToolCall("finish", {"answer": blank})
    *_, terminated, _, info = step(env, call)
    assert not terminated and info["last_action_error"]


@pytest.mark.parametrize(
    ("preset", "overrides", "replies", "ended_by"),
    [
        ("timesearch-r", {}, ["no call at all"], "unparsed_reply"),
        ("videozoomer", {}, ["no call at all"], "unparsed_reply"),
        ("longvt", {"max_turns": 2}, ["no call", "no call either"], "turn_budget"),
    ],
)
def test_the_record_keeps_the_reward_of_the_step_that_ended_it(
    preset: str, overrides: dict[str, Any], replies: list[str], ended_by: str
) -> None:
    env = make(preset, overrides=overrides)
    for reply in replies:
        _, reward, *_, info = step(env, parse_text_action(env.text_action_set(), reply))
    assert info["episode"]["ended_by"] == ended_by
    assert reward < 0 and info["episode"]["reward"] == pytest.approx(reward)


@pytest.mark.parametrize(
    "overrides",
    [
        {"messages": {"unknown_tool": 5}},
        {"tools": "abc"},
        {"preview_over": (1.0, "x")},
        {"unparsed_ends": "false"},
        {"name": 5},
    ],
)
def test_preset_overrides_of_the_wrong_kind_are_config_errors(overrides: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        PRESETS["dvd"].with_overrides(**overrides)


@pytest.mark.parametrize(("length", "answered"), [(20_000, True), (70_000, False)])
def test_every_text_adapter_reads_a_long_reply_alike(length: int, answered: bool) -> None:
    """One cap (the wire's 65,536 characters): the wrapper, TRL's act and a policy agree."""
    from policies.training.trl_text_env import text_env_factory, text_tool_dataset_rows
    from video_env.synth.suites import load_suite
    from video_env.wrappers.text_actions import TextActions

    reply = "x" * length + "<answer>B</answer>"
    wrapped = TextActions(make("longvt"))
    *_, terminated, _, info = wrapped.step(reply)
    assert terminated == answered, info.get("last_action_error")
    samples = load_suite("synth-tiny", limit=1)
    trl = text_env_factory("tools", samples, env_kwargs={"preset": "longvt"})()
    trl.reset(**text_tool_dataset_rows("tools", samples)[0])
    assert ("episode is over (answer)" in str(trl.act(reply))) == answered
    call = parse_text_action(make("longvt").text_action_set(), reply)
    assert isinstance(call, ToolCall) == answered
