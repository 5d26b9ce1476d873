"""Policies offline: every policy on every env it supports, the runner, the registry."""

from typing import Any

import pytest

import policies
from policies import Policy, run_episode
from video_env import ConfigError, UnknownNameError
from video_env.actions import AnswerAction, SpeedAction
from video_env.envs import ClipQueryEnv, PacingEnv, ZoomEnv
from video_env.envs.tools import ToolsEnv

ENVS = {"pacing": PacingEnv, "zoom": ZoomEnv, "clip_query": ClipQueryEnv, "tools": ToolsEnv}
RECORD_KEYS = {
    "sample_id",
    "answer",
    "correct",
    "score",
    "window",
    "gtou",
    "iou",
    "reward",
    "reward_parts",
    "turns",
    "frames",
    "vlm_calls",
    "caption_calls",
    "clip_calls",
    "invalid_actions",
    "ended_by",
    "simulated",
    "policy",
    "env",
    "seed",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "money_usd",
    "wall_s",
    "error",
    "traceback",
    "trajectory",
}


def cases() -> list[tuple[str, str]]:
    return [
        (name, kind)
        for name in policies.available(offline=True)
        for kind in policies.spec(name).env_kinds
    ]


@pytest.mark.parametrize(("name", "kind"), cases())
def test_every_offline_policy_runs_on_its_envs(name: str, kind: str) -> None:
    policy = policies.make(name)
    env = ENVS[kind]("synth-tiny", **policy.env_kwargs.get(kind, {}))
    for index in range(len(env.samples)):
        record = run_episode(env, policy, seed=0, options={"index": index})
        assert record["error"] is None, record["traceback"]
        assert set(record) >= RECORD_KEYS
        assert record["ended_by"] == "answer"
        assert record["policy"] == policy.name
        assert record["llm_calls"] == 0
        assert 0.0 <= record["gtou"] <= 1.0


QUICK_INDICES = range(0, 48, 3)  # 16 of synth-quick's 48 questions, every category


def quick_records(
    name: str, kind: str, indices: range = QUICK_INDICES, seeds: range = range(1)
) -> list[dict[str, Any]]:
    policy = policies.make(name)
    env = ENVS[kind]("synth-quick", **policy.env_kwargs.get(kind, {}))
    return [
        run_episode(env, policy, seed=seed, options={"index": i}) for i in indices for seed in seeds
    ]


def mean(records: list[dict[str, Any]], key: str) -> float:
    return sum(float(r[key]) for r in records) / len(records)


@pytest.mark.slow
def test_paper_policies_beat_random_and_falconeye_saves_vlm_calls_on_synth_quick() -> None:
    """A stub that answers without searching fails here: each paper agent beats random.

    Not a paper number (the perception is SIMULATED): a floor that the searches work.
    """
    random_zoom = mean(quick_records("random", "zoom", seeds=range(3)), "correct")
    # The offline VideoAgent is the weakest paper agent (lexical embedder: ~0.15 on
    # synth-quick against random's ~0.10), so it is compared on all 48 questions, with
    # random averaged over three seeds, rather than on a noisy 16.
    random_clip = mean(quick_records("random", "clip_query", range(48), range(3)), "correct")
    falcon = quick_records("falconeye", "zoom")
    flash = quick_records("falconeye-flash", "zoom")
    agent = quick_records("videoagent", "clip_query", range(48))
    sequential = quick_records("sequential", "zoom")
    assert mean(falcon, "correct") > random_zoom + 0.3
    assert mean(flash, "correct") > random_zoom + 0.3
    assert mean(agent, "correct") > random_clip
    assert mean(falcon, "vlm_calls") < mean(sequential, "vlm_calls")
    assert mean(flash, "vlm_calls") <= 10 < mean(sequential, "vlm_calls")


def test_offline_reasoners_are_labelled() -> None:
    assert policies.make("falconeye").name == "falconeye[offline]"
    assert policies.make("videoagent").name == "videoagent[offline]"
    assert policies.make("socratic-short").name == "socratic-short[offline]"
    assert policies.make("falconeye-flash").env_kwargs == {"zoom": {"budget": 10}}


def test_falconeye_offline_beats_its_baselines_on_synth_tiny() -> None:
    def accuracy(name: str) -> float:
        policy = policies.make(name)
        env = ZoomEnv("synth-tiny", **policy.env_kwargs.get("zoom", {}))
        records = [
            run_episode(env, policy, 0, options={"index": i}) for i in range(len(env.samples))
        ]
        return sum(bool(r["correct"]) for r in records) / len(records)

    assert accuracy("falconeye") > accuracy("socratic")
    assert accuracy("falconeye") > accuracy("uniform")


class Exploding(Policy):
    name = "exploding"
    env_kinds = ("pacing",)

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        if info["turn"] >= 2:
            raise RuntimeError("model server on fire")
        return SpeedAction(1)


class Dawdling(Policy):
    name = "dawdling"
    env_kinds = ("pacing",)

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        return SpeedAction(1) if "speed" in info["legal_actions"] else AnswerAction("A")


def test_runner_records_a_failing_policy_and_goes_on() -> None:
    env = PacingEnv("synth-tiny")
    record = run_episode(env, Exploding(), seed=0)
    assert record["error"] == "RuntimeError: model server on fire"
    assert "Traceback" in record["traceback"]
    assert record["ended_by"] == "error"
    assert record["correct"] is False
    assert record["turns"] == 2
    ok = run_episode(env, Dawdling(), seed=0)  # the env is still usable
    assert ok["error"] is None


def test_runner_abandons_a_policy_that_never_answers() -> None:
    record = run_episode(PacingEnv("synth-tiny"), Dawdling(), seed=0, max_steps=3)
    assert record["ended_by"] == "max_steps"
    assert record["turns"] == 3
    assert record["answer"] is None


def test_runner_rejects_an_unsupported_env() -> None:
    with pytest.raises(ValueError, match="does not support the zoom env"):
        run_episode(ZoomEnv("synth-tiny"), Dawdling())


def test_registry_errors() -> None:
    with pytest.raises(UnknownNameError, match="falconeye"):
        policies.make("falcon-eye")
    with pytest.raises(ConfigError, match="needs an LLM"):
        policies.make("blind-llm")
    assert "blind-llm" not in policies.available(offline=True)
    assert "blind-llm" in policies.available()


def test_a_custom_policy_takes_a_few_lines() -> None:
    class AlwaysA(Policy):
        name = "always-a"
        env_kinds = tuple(ENVS)

        def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
            return AnswerAction("A")

    for env_cls in ENVS.values():
        assert run_episode(env_cls("synth-tiny"), AlwaysA(), seed=1)["answer"] == "A"


def test_runner_closes_a_time_limit_truncation() -> None:
    from gymnasium.wrappers import TimeLimit

    record = run_episode(
        TimeLimit(PacingEnv("synth-tiny"), max_episode_steps=2), Dawdling(), seed=0
    )
    assert record["error"] is None
    assert record["ended_by"] == "truncated"
    assert record["turns"] == 2


def test_a_failed_reset_counts_as_wrong() -> None:
    record = run_episode(PacingEnv("synth-tiny"), Dawdling(), seed=0, options={"index": 99})
    assert record["error"].startswith("IndexError")
    assert record["correct"] is False


# -- issue 26: the baselines as FALCONEye's Table 3 defines them --------------------------


def _zoom_obs(confidences: list[float], options: str = "") -> dict[str, object]:
    import numpy as np

    clips = [(60.0 * k, 60.0 * (k + 1)) for k in range(4)]
    return {
        "question": "What is written on the sign?",
        "options": options,
        "duration": np.array([240.0], np.float32),
        "clips": tuple({"window": np.array(w, np.float32), "caption": "c"} for w in clips),
        "evaluations": tuple(
            {
                "window": np.array(clips[k], np.float32),
                "answer": f"A{k}",
                "confidence": np.array([c], np.float32),
            }
            for k, c in enumerate(confidences)
        ),
        "budget_left": np.array([100], np.int64),
    }


def test_sequential_bp_stops_strictly_above_the_threshold_one_clip_at_a_time() -> None:
    from video_env.actions import AnswerAction, EvaluateAction
    from video_env.types import Interval

    legal = {"legal_actions": ["evaluate", "answer"]}
    bp = policies.make("sequential-bp")
    first = bp.act(_zoom_obs([]), legal)
    assert first == EvaluateAction((Interval(0, 60),))  # released: one window per inference
    at = bp.act(_zoom_obs([0.8]), legal)  # open question, threshold 0.8: equal does not stop
    assert at == EvaluateAction((Interval(60, 120),))
    above = bp.act(_zoom_obs([0.8, 0.81]), legal)
    assert above == AnswerAction("A1", Interval(60, 120))
    old = policies.make("sequential-bp", stop_at_threshold=True, batch=8)
    assert isinstance(old.act(_zoom_obs([0.8]), legal), AnswerAction)
    assert policies.make("sequential").act(_zoom_obs([]), legal) == EvaluateAction(
        tuple(Interval(60.0 * k, 60.0 * (k + 1)) for k in range(4))
    )


def test_socratic_reads_768_token_captions_and_socratic_short_64() -> None:
    from policies.zoom_baselines import SocraticPolicy

    socratic, short = policies.make("socratic"), policies.make("socratic-short")
    assert socratic.env_kwargs["zoom"]["caption_max_tokens"] == 768
    assert short.env_kwargs["zoom"]["caption_max_tokens"] == 64
    assert isinstance(short, SocraticPolicy) and short.top_k is None  # every clip
    topk = SocraticPolicy(short=True, top_k=10)
    assert topk.name == "socratic-short-top10[offline]"  # the library's own variant
