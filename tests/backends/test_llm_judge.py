"""FALCON-Bench's LLM judge against the local fake OpenAI server: protocol, cache, failures."""

from pathlib import Path

import pytest

from video_env.actions.types import AnswerAction
from video_env.cache import DiskCache
from video_env.envs.zoom import ZoomEnv
from video_env.metrics.judges import Grade
from video_env.synth import load_suite
from video_env.types import Interval

pytest.importorskip("openai")
from video_env.backends.llm import OpenAICompatibleLLM
from video_env.backends.llm.testing import FakeOpenAIServer, chat_reply, error_reply
from video_env.errors import ConfigError
from video_env.metrics.llm_judge import JudgeError, LLMJudge, judge_prompts, parse_verdict

KEY = "sk-test"


def judge_for(
    server: FakeOpenAIServer, cache: DiskCache | None, on_failure: str = "ungraded"
) -> LLMJudge:
    llm = OpenAICompatibleLLM(
        "judge-model", server.base_url, KEY, timeout_s=2, max_retries=2, backoff_s=(0.01, 0.02)
    )
    return LLMJudge(llm, cache=cache, on_failure=on_failure)


def test_verdict_parsing_follows_falcon_bench() -> None:
    assert parse_verdict('{"pred": "yes", "score": 4}') == Grade(True, 4.0)
    assert parse_verdict("{'pred': 'No', 'score': 1}") == Grade(False, 1.0)  # a Python dict
    assert parse_verdict('```json\n{"pred": "yes", "score": 5.0}\n```') == Grade(True, 5.0)
    assert parse_verdict('{"pred": "yes", "score": "3"}') == Grade(True, 3.0)
    assert parse_verdict('{"pred": "yes", "score": 9}') == Grade(True, 5.0)
    assert parse_verdict('{"pred": "no"}') == Grade(False, 0.0)
    with pytest.raises(JudgeError, match="yes/no"):
        parse_verdict('{"pred": "maybe", "score": 3}')
    with pytest.raises(JudgeError, match="not a JSON object"):
        parse_verdict("I think it is right")


def test_scores_are_truncated_as_the_released_parse_score() -> None:
    # released utils.parse_score: int(score); the prompt's own example is 4.8
    assert parse_verdict('{"pred": "yes", "score": 4.8}') == Grade(True, 4.0)
    assert parse_verdict('{"pred": "yes", "score": "4.8"}') == Grade(True, 0.0)  # int("4.8")
    assert parse_verdict('{"score": 3}') == Grade(False, 3.0)  # parse_acc: a missing pred is no
    # the integer rule, a setting: a non-integral score counts 0, a missing pred is an error
    assert parse_verdict('{"pred": "yes", "score": 4.8}', "integer") == Grade(True, 0.0)
    with pytest.raises(JudgeError, match="yes/no"):
        parse_verdict('{"score": 3}', "integer")


def test_prompt_snapshot() -> None:
    system, user = judge_prompts()
    assert system.startswith("You are an intelligent judge of answers to questions about videos.")
    assert "{question}" in user and "{reference}" in user and "{prediction}" in user
    assert '"pred"' in user and '"score"' in user and "0 to 5" in user


def test_grades_through_the_server_and_caches(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "c")
    with FakeOpenAIServer(default=chat_reply('{"pred": "yes", "score": 4}')) as server:
        judge = judge_for(server, cache)
        assert judge.grade("What is written?", "HARBOR", "the word harbor") == Grade(True, 4.0)
        assert judge.grade("What is written?", "HARBOR", "the word harbor") == Grade(True, 4.0)
        assert len(server.requests) == 1
        body = server.requests[0].body
        assert body["temperature"] == 0
        assert "Correct Answer: HARBOR" in body["messages"][1]["content"]
        assert "Predicted Answer: the word harbor" in body["messages"][1]["content"]
        # Another run (a new judge object) reads the verdict from disk.
        assert judge_for(server, cache).grade("What is written?", "HARBOR", "the word harbor")
        assert len(server.requests) == 1
        judge.grade("What is written?", "HARBOR", "a boat")  # another prediction: a new call
        assert len(server.requests) == 2
        assert judge.grade("What is written?", "HARBOR", "  ") == Grade(False, 0.0)
        assert len(server.requests) == 2


def test_failures_raise_judge_error_and_are_not_cached(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "c")
    with FakeOpenAIServer(default=error_reply(503)) as server:
        judge = judge_for(server, cache)
        with pytest.raises(JudgeError, match="judge call failed"):
            judge.grade("q", "a", "b")
        assert len(server.requests) == 3  # retried, then given up
        server.script(chat_reply("no idea"))
        with pytest.raises(JudgeError):
            judge.grade("q", "a", "b")
        assert judge.failures == 2 and cache.info().by_kind["judge"] == 0


def test_a_failed_grading_counts_no_by_default_and_is_still_reported(tmp_path: Path) -> None:
    sample = next(s for s in load_suite("synth-tiny") if not s.is_mcq)
    with FakeOpenAIServer(default=chat_reply("no idea")) as server:
        llm = OpenAICompatibleLLM("judge-model", server.base_url, KEY, max_retries=0)
        judge = LLMJudge(llm, cache=DiskCache(tmp_path / "c"))  # the released default
        grade = judge.grade("q", "a", "b")
        assert grade.correct is False and grade.score == 0.0 and grade.error is not None
        assert judge.failures == 1
        env = ZoomEnv([sample], judge=judge)
        env.reset(seed=0)
        *_, info = env.step(AnswerAction("something", Interval(0, 10)))
    record = info["episode"]
    assert record["correct"] is False and record["score"] == 0.0  # in the denominator
    assert "not a JSON object" in record["judge_error"] and record["judge_errors"] >= 1
    with pytest.raises(ConfigError):
        LLMJudge(llm, on_failure="drop")


def test_a_failing_judge_is_recorded_in_the_episode_not_raised(tmp_path: Path) -> None:
    sample = next(s for s in load_suite("synth-tiny") if not s.is_mcq)
    with FakeOpenAIServer(default=error_reply(500)) as server:
        env = ZoomEnv([sample], judge=judge_for(server, DiskCache(tmp_path / "c")))
        env.reset(seed=0)
        *_, terminated, _, info = env.step(AnswerAction("something", Interval(0, 10)))
    record = info["episode"]
    assert terminated and record["correct"] is None and record["score"] is None
    assert "judge call failed" in record["judge_error"] and record["judge_errors"] >= 1


def test_judge_by_spec(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from video_env.backends.registry import make_judge
    from video_env.metrics.judges import ExactMatchJudge

    assert isinstance(make_judge(None), ExactMatchJudge)
    assert isinstance(make_judge("exact"), ExactMatchJudge)
    with FakeOpenAIServer(default=chat_reply('{"pred": "no", "score": 0}')) as server:
        monkeypatch.setenv("VIDEO_ENV_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("VIDEO_ENV_LLM_API_KEY", KEY)
        judge = make_judge("openai:judge-model")
        assert isinstance(judge, LLMJudge) and judge.config["llm"]["model"] == "judge-model"
        sample = next(s for s in load_suite("synth-tiny") if not s.is_mcq)
        env = ZoomEnv([sample], judge="openai:judge-model")
        env.reset(seed=0)
        *_, info = env.step(AnswerAction(sample.answer or "", Interval(0, 10)))
        assert info["episode"]["correct"] is False  # the LLM judge decided, not exact match


def test_a_bad_judge_spec_says_how_it_was_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from video_env.backends.registry import make_judge
    from video_env.errors import ConfigError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("VIDEO_ENV_LLM_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"judge 'exactt' \(exact, embedding, or an LLM spec"):
        make_judge("exactt")
    with pytest.raises(ConfigError, match=r"'local:\./no/such/model': no such folder"):
        make_judge("local:./no/such/model")
