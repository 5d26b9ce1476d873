"""The Tools env's agents (VideoSeek, DVD) and each preset's baselines (uniform, random)."""

import json
from pathlib import Path

import pytest
from conftest import bench_records
from shared_fixtures import RuleLLM

import policies
from policies import run_episode
from policies.tool_agents.calls import VideoUnits, answer_call, clip_lines, position, span_call
from video_env.envs.tool_presets import PRESETS
from video_env.envs.tools import ToolsEnv
from video_env.types import Interval

BENCH = ["bench", "--suite", "synth-tiny", "--envs", "tools", "--quiet", "--no-plots",
         "--executor", "serial"]  # fmt: skip


def test_the_bench_runs_the_agents_and_baselines_offline(tmp_path: Path) -> None:
    from video_env.cli import main

    names = ["videoseek", "dvd", "tools-random", "tools-uniform", "tools-uniform:videozoomer"]
    assert main([*BENCH, "--policies", *names, "--limit", "2", "--out", str(tmp_path)]) == 0
    records = bench_records(tmp_path)
    by_policy = {r["policy"]: r for r in records}
    assert set(by_policy) == {
        "videoseek[offline]", "dvd[offline]", "tools-random", "tools-uniform",
        "tools-uniform:videozoomer",
    }  # fmt: skip
    assert all(r["error"] is None and r["ended_by"] == "answer" for r in records)
    presets = {r["policy"]: r["tools_preset"] for r in records}
    assert presets["videoseek[offline]"] == "videoseek" and presets["dvd[offline]"] == "dvd"
    assert presets["tools-uniform"] == "longvt"  # the bench's preset, read from the tools
    assert presets["tools-uniform:videozoomer"] == "videozoomer"
    seek = by_policy["videoseek[offline]"]
    assert seek["tool_calls"]["overview"] == 1 and seek["tool_calls"]["skim"] >= 1
    assert seek["sub_model_frames"] >= 64 + 16 and seek["frames_shown"] == 0
    dvd = by_policy["dvd[offline]"]
    assert dvd["tool_calls"]["clip_search_tool"] == 1 and dvd["tool_calls"]["frame_inspect_tool"]
    assert dvd["index"] is not None  # the caption index's cost, apart


SEEK_REPLIES = [
    'I will get the storyline first.\n{"name": "overview", "arguments": {}}',
    'The sign may be early.\n{"name": "skim", "arguments": "{\\"query\\": \\"the sign\\", '
    '\\"start_time\\": 0, \\"end_time\\": 40}"}',
    "Thought only, no call.",  # re-asked once with VideoSeek's reminder
    '{"name": "focus", "arguments": {"query": "the sign", "start_time": 10, "end_time": 20}}',
    'The evidence decides it.\n{"name": "answer", "arguments": {"answer": "B"}}',
]
DVD_REPLIES = [
    '{"name": "global_browse_tool", "arguments": {"query": "what happens"}}',
    '{"name": "clip_search_tool", "arguments": {"event_description": "a street sign"}}',
    '{"name": "frame_inspect_tool", "arguments": {"question": "What does the sign say?", '
    '"time_ranges_hhmmss": [["00:00:10", "00:00:20"]]}}',
    '{"name": "finish", "arguments": {"answer": "B"}}',
]


@pytest.mark.parametrize(
    ("name", "replies", "tools"),
    [
        ("videoseek", SEEK_REPLIES, {"overview": 1, "skim": 1, "focus": 1}),
        ("dvd", DVD_REPLIES, {"global_browse_tool": 1, "clip_search_tool": 1,
                              "frame_inspect_tool": 1}),
    ],
)  # fmt: skip
def test_the_agents_run_their_loops_through_a_fake_openai_server(
    name: str, replies: list[str], tools: dict[str, int], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    pytest.importorskip("openai")
    from benchmarks import jobs
    from video_env.backends.llm.testing import FakeOpenAIServer, chat_reply
    from video_env.cli import main

    monkeypatch.setattr(jobs, "_WORKERS", {})  # a cached worker would hold another server
    script = [chat_reply("OK")] + [chat_reply(r, prompt_tokens=50) for r in replies]
    with FakeOpenAIServer(script) as server:
        monkeypatch.setenv("VIDEO_ENV_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("VIDEO_ENV_LLM_API_KEY", "sk-test")
        args = [*BENCH, "--policies", name, "--limit", "1", "--llm", "openai:fake",
                "--llm-retries", "0", "--out", str(tmp_path)]  # fmt: skip
        assert main(args) == 0
        requests = server.requests
    (record,) = bench_records(tmp_path)
    assert record["error"] is None and record["policy"] == name
    assert record["ended_by"] == "answer" and record["answer"] == "B"
    assert record["tool_calls"] == tools
    assert record["sub_model_frames"] > 0 and record["llm_calls"] == len(replies)
    assert record["llm_reply_failures"] == 0 and record["prompt_tokens"] == 50 * len(replies)
    first = requests[1].body["messages"]
    assert first[0]["role"] == "system" and "Question" in first[1]["content"]
    if name == "videoseek":
        assert "Call ONLY ONE tool per turn" in first[0]["content"]
        assert "Step [1 / 20]" in first[-1]["content"]
        reasked = requests[4].body["messages"][-1]["content"]
        assert reasked.startswith("There is no function call in your response.")
    else:
        assert "THINK -> ACT -> OBSERVE" in first[0]["content"]
        last = requests[-1].body["messages"]
        assert "Observation from `frame_inspect_tool" in last[-1]["content"]


def test_dvd_is_asked_to_finish_on_its_last_iteration() -> None:
    llm = RuleLLM(lambda p: '{"name": "clip_search_tool", "arguments": {"event_description": "x"}}'
                  if "finish" not in p.splitlines()[-1] else
                  '{"name": "finish", "arguments": {"answer": "A"}}')  # fmt: skip
    policy = policies.make("dvd", llm=llm)
    env = ToolsEnv("synth-tiny", **policy.env_kwargs["tools"])
    record = run_episode(env, policy, seed=0, options={"index": 0})
    assert record["ended_by"] == "answer" and record["turns"] == 15
    assert record["tool_calls"] == {"clip_search_tool": 14} and record["answer"] == "A"
    assert llm.count("Please call the `finish` function") == 1


def test_videoseek_answers_with_the_closing_reply_at_its_last_step() -> None:
    llm = RuleLLM(lambda p: '{"name": "overview", "arguments": {}}'
                  if "maximum number of steps" not in p else "C")  # fmt: skip
    policy = policies.make("videoseek", llm=llm)
    env = ToolsEnv("synth-tiny", **policy.env_kwargs["tools"])
    record = run_episode(env, policy, seed=0, options={"index": 0})
    assert record["turns"] == 20 and record["answer"] == "C"
    assert record["tool_calls"] == {"overview": 19} and record["llm_calls"] == 20


def test_an_unusable_llm_turn_is_played_by_the_offline_planner() -> None:
    llm = RuleLLM(lambda p: "I am not sure.")
    policy = policies.make("dvd", llm=llm)
    env = ToolsEnv("synth-tiny", **policy.env_kwargs["tools"])
    record = run_episode(env, policy, seed=0, options={"index": 0})
    assert record["error"] is None and record["ended_by"] == "answer"
    assert record["llm_reply_failures"] == record["turns"] and record["llm_replies_used"] == 0
    assert record["tool_calls"]["clip_search_tool"] == 1  # the offline plan's calls


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("base", ["tools-uniform", "tools-random"])
def test_each_baseline_answers_on_every_preset_with_valid_calls(base: str, preset: str) -> None:
    policy = policies.make(f"{base}:{preset}")
    assert policy.name == f"{base}:{preset}"
    env = ToolsEnv("synth-tiny", **policy.env_kwargs["tools"])
    for index in range(3):
        record = run_episode(env, policy, seed=0, options={"index": index})
        assert record["error"] is None, record["traceback"]
        assert record["ended_by"] == "answer" and record["invalid_actions"] == 0
        assert record["tools_preset"] == preset and sum(record["tool_calls"].values()) >= 1
    if base == "tools-uniform" and preset != "longvidsearch":  # every turn but the answer's
        assert record["turns"] == PRESETS[preset].max_turns  # (LongVidSearch: each clip once)


def test_a_plain_baseline_reads_its_preset_from_the_tool_names() -> None:
    policy = policies.make("tools-uniform")
    record = run_episode(ToolsEnv("synth-tiny", preset="framethinker"), policy, seed=0)
    assert record["tools_preset"] == "framethinker" and record["invalid_actions"] == 0
    assert record["tool_calls"]["get frame number at time"] == 1


def test_calls_are_written_in_each_presets_units() -> None:
    units = VideoUnits(100.0, fps=30.0)
    span = Interval(10.04, 20.06)
    dvd, mtr, ft = PRESETS["dvd"], PRESETS["video-mtr"], PRESETS["framethinker"]
    inspect = dvd.tools[2]  # frame_inspect_tool
    assert span_call(dvd, inspect, span, units, "q").arguments == {
        "question": "q", "time_ranges_hhmmss": [["00:00:10", "00:00:21"]],
    }  # fmt: skip
    assert position(ft, 10.0, units) == 300 and position(mtr, 100.0, units, upper=True) == 63
    zoom = PRESETS["videozoomer"].tools[0]  # video_zoom
    wide = span_call(PRESETS["videozoomer"], zoom, Interval(0, 100), units)
    assert wide.arguments["segment"] == [0.0, 100.0] and wide.arguments["fps"] * 100 <= 16
    lvs = PRESETS["longvidsearch"]
    assert answer_call(lvs, "x", clips=[2]).arguments == {
        "answer_text": "x", "evidence_clip_ids": [2],
    }  # fmt: skip
    assert [c.clip for c in clip_lines("clip 3 [00:00:20-00:00:30]: a sign\nnoise")] == [3]
    assert json.dumps(answer_call(PRESETS["falconeye"], "B", [span]).arguments)


@pytest.mark.parametrize(
    ("name", "tool_reply"),
    [
        ("videoseek", '{"name": "overview", "arguments": {}}'),
        ("dvd", '{"name": "clip_search_tool", "arguments": {"event_description": "x"}}'),
    ],
)
def test_a_tool_call_on_the_last_turn_is_no_answer_the_offline_one_answers(
    name: str, tool_reply: str
) -> None:
    llm = RuleLLM(lambda p: tool_reply)  # even the closing prompt gets a tool call
    policy = policies.make(name, llm=llm)
    env = ToolsEnv("synth-tiny", **policy.env_kwargs["tools"])
    record = run_episode(env, policy, seed=0, options={"index": 0})
    assert record["ended_by"] == "answer" and record["answer"] is not None
    assert record["llm_reply_failures"] == 1  # the last turn's reply, counted
    assert record["llm_replies_used"] == record["turns"] - 1


def test_an_offline_name_runs_the_offline_reasoner_in_a_run_with_an_llm() -> None:
    llm = RuleLLM(lambda p: '{"name": "finish", "arguments": {"answer": "C"}}')
    policy = policies.make("dvd[offline]", llm=llm)
    env = ToolsEnv("synth-tiny", **policy.env_kwargs["tools"])
    record = run_episode(env, policy, seed=0, options={"index": 0})
    assert llm.prompts == [] and record["llm_calls"] == 0
    assert record["tool_calls"]["clip_search_tool"] == 1  # the offline plan's calls


@pytest.mark.parametrize(
    ("name", "preset"),
    [("videoseek", "longvt"), ("dvd", "videoseek"), ("tools-uniform:longvt", "dvd")],
)
def test_an_agent_on_another_presets_env_is_an_error_not_a_wrong_answer(
    name: str, preset: str
) -> None:
    record = run_episode(ToolsEnv("synth-tiny", preset=preset), policies.make(name), seed=0)
    assert record["error"] is not None and f"preset={name.split(':')[-1]!r}" in record["error"]


@pytest.mark.parametrize(
    "name",
    [
        "tools-uniform:longvt?calls=1.5",
        'tools-uniform:longvt?calls="3"',
        "tools-random:longvt?seed=-1",
        'tools-random:longvt?seed="x"',
    ],
)
def test_bad_baseline_settings_are_config_errors(name: str) -> None:
    from video_env.errors import ConfigError

    with pytest.raises(ConfigError):
        policies.make(name)


def test_a_policy_that_cannot_be_built_fails_its_jobs_and_the_bench_goes_on(
    tmp_path: Path,
) -> None:
    from video_env.cli import main

    names = ["tools-uniform:longvt", "tools-uniform:longvt?nosuch=1"]
    from benchmarks.records import EpisodeLog

    assert main([*BENCH, "--policies", *names, "--limit", "2", "--out", str(tmp_path)]) == 0
    records = EpisodeLog(tmp_path).load()
    good = [r for r in records if "nosuch" not in r["job"]]
    bad = [r for r in records if "nosuch" in r["job"]]
    assert len(good) == len(bad) == 2 and all(r["error"] is None for r in good)
    assert all(r["lost"] and "could not build it" in r["error"] for r in bad)
    assert "nosuch" in bad[0]["error"]
