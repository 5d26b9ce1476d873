"""LLM-prompted policies: their prompts, their use of replies, and robustness to bad replies.

The in-process ``RuleLLM`` is a test double (it answers by rules), used to check the
agents' control flow; ``FakeOpenAIServer`` checks what a real ``openai`` client sends.
"""

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import RuleLLM

import policies
from policies import run_episode
from video_env.backends.llm import OpenAICompatibleLLM
from video_env.backends.llm.testing import FakeOpenAIServer, chat_reply
from video_env.envs import ClipQueryEnv, PacingEnv, ZoomEnv

CORPUS = [
    json.loads(line)
    for line in (Path(__file__).parents[1] / "fixtures" / "llm_replies.jsonl").open()
]


def test_videoagent_with_an_llm_predicts_reflects_and_queries() -> None:
    rounds = {"n": 0}

    def rule(prompt: str) -> str:
        if "Please think step-by-step" in prompt:
            return '{"reasoning": "frame 42", "final_answer": "C", "supporting_frames": [42, 84]}'
        if "Assessment Focus" in prompt:
            rounds["n"] += 1
            return '{"confidence": 3}' if rounds["n"] >= 2 else '{"confidence": 1}'
        return '{"frame_descriptions": [{"segment_id": 2, "description": "a wall clock"}]}'

    llm = RuleLLM(rule)
    env = ClipQueryEnv("synth-tiny")
    record = run_episode(env, policies.make("videoagent", llm=llm), seed=0, options={"index": 0})
    assert record["error"] is None
    assert record["answer"] == "C"
    assert record["caption_calls"] == 6  # 5 initial frames + one retrieved
    assert record["window"] == [36.0, 88.0]  # frames 42 and 84 at 1 fps (41 s, 83 s) ± 5 s
    assert sum("Assessment Focus" in p for p in llm.prompts) == 2


def test_socratic_and_blind_llm() -> None:
    llm = RuleLLM(lambda p: '{"answer": "D", "window": [0, 30]}')
    record = run_episode(ZoomEnv("synth-tiny"), policies.make("socratic", llm=llm), seed=0)
    assert record["answer"] == "D"
    assert record["window"] == [0.0, 30.0]
    assert "Answer from the captions" in llm.prompts[0]
    blind = RuleLLM(lambda p: '{"answer": "A"}')
    record = run_episode(PacingEnv("synth-tiny"), policies.make("blind-llm", llm=blind), seed=0)
    assert record["answer"] == "A"
    assert record["turns"] == 1
    assert "cannot see" in blind.prompts[0]


@pytest.mark.parametrize("case", CORPUS, ids=[c["id"] for c in CORPUS])
def test_agents_survive_every_malformed_reply(case: dict[str, Any]) -> None:
    for name, env in (
        ("falconeye", ZoomEnv("synth-tiny", budget=6)),
        ("videoagent", ClipQueryEnv("synth-tiny")),
    ):
        llm = RuleLLM(lambda _: case["reply"])
        # the re-ask is FALCONEye's default and a VideoAgent setting (released: none)
        policy = policies.make(name, llm=llm, **({"reask": True} if name == "videoagent" else {}))
        record = run_episode(env, policy, seed=0, options={"index": 1})
        assert record["error"] is None, record["traceback"]
        assert record["ended_by"] == "answer"
        # every unusable reply is re-asked once, then counted as one failure
        reasks = sum(p.startswith("Your reply had") for p in llm.prompts)
        asks = len(llm.prompts) - reasks
        assert asks >= 1
        assert policy.caller.failures == reasks  # type: ignore[attr-defined]
        assert record["llm_reply_failures"] == reasks
        assert record["llm_calls"] == len(llm.prompts)
        if case.get("error"):  # nothing usable: every ask failed, the offline rule took over
            assert reasks == asks


@pytest.mark.parametrize("case", CORPUS, ids=[c["id"] for c in CORPUS])
def test_videoagent_survives_malformed_replies_within_seven_calls(case: dict[str, Any]) -> None:
    llm = RuleLLM(lambda _: case["reply"])
    policy = policies.make("videoagent", llm=llm)  # released: no re-ask
    record = run_episode(ClipQueryEnv("synth-tiny"), policy, seed=0, options={"index": 1})
    assert record["error"] is None and record["ended_by"] == "answer"
    assert not any(p.startswith("Your reply had") for p in llm.prompts)
    assert record["llm_calls"] == len(llm.prompts) <= 7


def _released_rule(predict: str, confidence: str, find: str) -> RuleLLM:
    def rule(prompt: str) -> str:
        if "Please think step-by-step" in prompt:
            return predict
        if "Assessment Focus" in prompt:
            return confidence
        return find

    return RuleLLM(rule)


def test_videoagent_unparsable_answer_is_a_random_option_after_reflecting() -> None:
    llm = _released_rule("I would say C", '{"confidence": 3}', "{}")
    policy = policies.make("videoagent", llm=llm)
    env = ClipQueryEnv("synth-tiny")
    record = run_episode(env, policy, seed=0, options={"index": 0})
    sample = env.samples[0]
    letters = "ABCDE"[: len(sample.options or ())] or None
    assert record["error"] is None
    assert llm.count("Assessment Focus") == 1  # reflection ran on the unusable reply
    assert record["llm_calls"] == 2 and record["caption_calls"] == 5  # confidence 3: answer
    assert (record["answer"] in letters) if letters else record["answer"] == "unknown"
    assert policy.random_answers == 1 and record["llm_reply_failures"] == 1  # type: ignore[attr-defined]
    again = run_episode(
        ClipQueryEnv("synth-tiny"),
        policies.make("videoagent", llm=llm),
        seed=0,
        options={"index": 0},
    )
    assert again["answer"] == record["answer"]  # seeded per sample and episode
    # the heuristic fallback, a setting: no reflection on the offline answer's confidence
    offline = _released_rule("I would say C", '{"confidence": 3}', "{}")
    fallback = policies.make("videoagent", llm=offline, on_unusable="offline", reask=True)
    run_episode(ClipQueryEnv("synth-tiny"), fallback, seed=0, options={"index": 0})
    assert offline.count("Your reply had") >= 1  # the re-ask, counted as an LLM call


def test_videoagent_unusable_find_frames_reply_ends_the_search() -> None:
    llm = _released_rule(
        '{"final_answer": "C", "supporting_frames": []}', '{"confidence": 1}', "no frames"
    )
    record = run_episode(
        ClipQueryEnv("synth-tiny"),
        policies.make("videoagent", llm=llm),
        seed=0,
        options={"index": 0},
    )
    assert record["answer"] == "C" and record["caption_calls"] == 5  # nothing retrieved
    assert record["llm_calls"] == 3  # predict, reflect, find frames
    old = _released_rule(
        '{"final_answer": "C", "supporting_frames": []}', '{"confidence": 1}', "no frames"
    )
    policy = policies.make("videoagent", llm=old, on_unusable="offline")
    fallback = run_episode(ClipQueryEnv("synth-tiny"), policy, seed=0, options={"index": 0})
    assert fallback["caption_calls"] > 5  # the offline queries retrieved frames


def test_uniform_n_captions_n_frames_and_answers_at_once() -> None:
    llm = RuleLLM(lambda p: '{"final_answer": "B", "supporting_frames": [1]}')
    policy = policies.make("uniform-frames:12", llm=llm)
    env = ClipQueryEnv("synth-tiny", **policy.env_kwargs["clip_query"])  # as the bench does
    record = run_episode(env, policy, seed=0, options={"index": 0})
    assert record["caption_calls"] == 12 and record["llm_calls"] == 1
    assert record["answer"] == "B" and record["turns"] == 1
    assert "frame 1:" in llm.prompts[0]  # numbered at 1 fps, the first frame included
    offline = policies.make("uniform-8")
    assert offline.name == "uniform-8[offline]"
    env = ClipQueryEnv("synth-tiny", **offline.env_kwargs["clip_query"])
    record = run_episode(env, offline, seed=0, options={"index": 0})
    assert record["caption_calls"] == 8 and record["error"] is None


def test_falconeye_with_a_real_openai_client_against_a_fake_server() -> None:
    universal = json.dumps(
        {
            "summary": "A kitchen, then a street.",
            "candidates": [{"start_s": 0, "end_s": 60, "explanation": "the sign"}],
            "decision": "reason",
            "zoom": [],
            "final_answer": "A",
            "window": [0, 60],
        }
    )
    with FakeOpenAIServer(
        default=chat_reply(universal, prompt_tokens=100, completion_tokens=20)
    ) as server:
        llm = OpenAICompatibleLLM(
            "gpt-4o-mini",
            base_url=server.base_url,
            api_key="sk-test-secret",
            timeout_s=5,
            max_retries=1,
            backoff_s=(0.01, 0.02),
        )
        record = run_episode(
            ZoomEnv("synth-tiny", budget=5), policies.make("falconeye", llm=llm), seed=0
        )
        requests = server.requests
    assert record["error"] is None
    assert record["llm_calls"] == len(requests)
    assert record["prompt_tokens"] == 100 * len(requests)
    assert record["money_usd"] > 0
    assert all(r.body["model"] == "gpt-4o-mini" for r in requests)
    assert all(r.body["response_format"] == {"type": "json_object"} for r in requests)
    contents = [r.body["messages"][0]["content"] for r in requests]
    assert "Generate a short but detailed summary" in contents[0]
    assert "Find the most relevant clips" in contents[1]
    assert "sk-test-secret" not in json.dumps(record)


def test_videoagent_with_a_real_openai_client_against_a_fake_server() -> None:
    universal = json.dumps(
        {
            "reasoning": "r",
            "final_answer": "B",
            "supporting_frames": [1],
            "confidence": 1,
            "frame_descriptions": [{"segment_id": 1, "description": "a clock"}],
        }
    )
    with FakeOpenAIServer(default=chat_reply(universal)) as server:
        llm = OpenAICompatibleLLM(
            "qwen2.5-7b-instruct", base_url=server.base_url, api_key="k", timeout_s=5, max_retries=0
        )
        record = run_episode(
            ClipQueryEnv("synth-tiny"),
            policies.make("videoagent", llm=llm),
            seed=0,
            options={"index": 0},
        )
        requests = server.requests
    assert record["error"] is None
    assert record["answer"] == "B"
    # the released main.py: (predict, reflect, find frames) x 2 retrievals, then answer
    assert record["llm_calls"] == len(requests) == 2 * 3 + 1
    assert record["caption_calls"] == 5 + 2  # 5 initial frames, one retrieved per round
    assert all(r.body["response_format"] == {"type": "json_object"} for r in requests)
    first = requests[0].body["messages"][0]["content"]
    assert first.startswith("Given a video that has 167 frames, the frames are decoded at 1 fps")
    assert "frame 1: " in first and "frame 167: " in first
    assert record["money_usd"] == 0.0  # a local model is free


def test_per_step_llm_costs_are_in_the_trajectory() -> None:
    llm = RuleLLM(lambda p: '{"answer": "D", "window": [0, 30]}')
    record = run_episode(ZoomEnv("synth-tiny"), policies.make("socratic", llm=llm), seed=0)
    steps = record["trajectory"]
    assert len(steps) == 1
    assert steps[0]["llm"]["llm_calls"] == 1
    assert steps[0]["llm"]["prompt_tokens"] == record["prompt_tokens"] > 0


def test_falconeye_reason_decision_searches_new_clips() -> None:
    def rule(prompt: str) -> str:
        if "Find the most relevant clips" in prompt:
            fresh = "[0-60s]" in prompt
            return json.dumps({"candidates": [[0, 60]] if fresh else [[60, 120]]})
        if "next step" in prompt:
            return '{"decision": "reason"}'
        if "summary outlining" in prompt:
            return '{"summary": "s"}'
        return '{"final_answer": "A", "window": [0, 60]}'

    llm = RuleLLM(rule)
    record = run_episode(
        ZoomEnv("synth-tiny", budget=3),
        policies.make("falconeye", llm=llm, whole_video_first=False),
        seed=0,
    )
    evaluated = [tuple(e[:2]) for e in record["explored"] if e[2] == "evaluate"]
    assert evaluated[:2] == [(0.0, 60.0), (60.0, 120.0)]  # reasoned again, did not give up
    assert sum("Find the most relevant clips" in p for p in llm.prompts) >= 2


def test_iterative_sampling_never_repeats_a_window() -> None:
    policy = policies.make("iterative-sampling")
    env = ZoomEnv("synth-quick")
    for index in range(0, 48, 4):
        record = run_episode(env, policy, seed=0, options={"index": index})
        windows = [tuple(e[:2]) for e in record["explored"] if e[2] == "evaluate"]
        assert len(windows) == len(set(windows)), windows
