"""FALCONEye's decision loop against the paper and its released code (docs/fidelity.md).

Observations are built by hand so that each rule (threshold, LLM decision, m = 0,
explored captions, summary cache) is exercised on exactly the case it is about; the
in-process ``RuleLLM`` answers by rules and records the prompts.
"""

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from conftest import RuleLLM

from policies import run_episode
from policies.falconeye import FalconEyePolicy
from policies.falconeye_steps import Decision, candidate_windows, children
from policies.reasoning import is_non_answer
from video_env.actions import AnswerAction, EvaluateAction
from video_env.envs import ZoomEnv
from video_env.types import Interval

CAPTIONS = {
    (0, 60): "a kitchen with white cabinets",
    (60, 120): "a busy city street with a street sign",
    (120, 180): "a park with a fountain",
}
MCQ = "A. MAPLE\nB. HARBOR\nC. ZENITH\nD. COBALT"
LEGAL = {"legal_actions": ["evaluate", "answer"]}


SUMMARY, REASONING, DECISION, FINAL = (
    "Generate a short but detailed summary",
    "Find the most relevant clips",
    "determine the most logical\nnext step",
    "Return the final answer",
)


def observation(
    evaluations: Sequence[tuple[float, float, str, float]] = (),
    *,
    options: str = "",
    question: str = "What is written on the street sign?",
    budget: int = 45,
) -> dict[str, Any]:
    return {
        "question": question,
        "options": options,
        "duration": np.array([180.0], np.float32),
        "clips": tuple(
            {"window": np.array(w, np.float32), "caption": c} for w, c in CAPTIONS.items()
        ),
        "evaluations": tuple(
            {
                "window": np.array([s, e], np.float32),
                "answer": a,
                "confidence": np.array([c], np.float32),
            }
            for s, e, a, c in evaluations
        ),
        "budget_left": np.array([budget], np.int64),
    }


def rule_with(**replies: object) -> Callable[[str], str]:
    """Replies per prompt kind: summary, reasoning, decision, final (JSON-encoded)."""
    markers = {"summary": SUMMARY, "reasoning": REASONING, "decision": DECISION, "final": FINAL}

    def rule(prompt: str) -> str:
        for kind, marker in markers.items():
            if marker in prompt:
                return json.dumps(replies.get(kind, {}))
        return "{}"  # a re-ask after an unusable reply

    return rule


def started(policy: FalconEyePolicy, obs: dict[str, Any]) -> Any:
    policy.reset(obs, LEGAL)
    return policy.act(obs, LEGAL)


# -- 1, 7: the threshold and the decision ------------------------------------------------


@pytest.mark.parametrize(("confidence", "answers"), [(0.95, True), (0.9, False), (0.85, False)])
def test_mcq_stops_strictly_above_the_threshold_without_asking(
    confidence: float, answers: bool
) -> None:
    llm = RuleLLM(rule_with(summary={"summary": "s"}, reasoning={"candidates": [[60, 120]]}))
    policy = FalconEyePolicy(llm)
    started(policy, observation(options=MCQ))
    action = policy.act(observation([(60, 120, "B", confidence)], options=MCQ), LEGAL)
    assert isinstance(action, AnswerAction) is answers
    if answers:
        assert action == AnswerAction("B", Interval(60, 120))
    decisions = [p for p in llm.prompts if DECISION in p]
    assert not any('"answer": a response' in p for p in decisions)  # the confidence rule


def test_an_open_answer_above_the_threshold_goes_to_the_llm() -> None:
    llm = RuleLLM(
        rule_with(
            summary={"summary": "s"},
            reasoning={"candidates": [[60, 120], [120, 180]]},
            decision={"decision": "reason", "final_answer": "Nan"},
        )
    )
    policy = FalconEyePolicy(llm)
    started(policy, observation())
    refusal = observation([(60, 120, "I cannot tell from these frames.", 0.85)])
    action = policy.act(refusal, LEGAL)
    assert not isinstance(action, AnswerAction)  # the LLM said keep searching
    assert llm.count(DECISION) == 1
    decision = next(p for p in llm.prompts if DECISION in p)
    assert '"answer": a response answers the question completely' in decision


def test_the_llm_accepts_an_open_answer_with_its_window() -> None:
    llm = RuleLLM(
        rule_with(
            summary={"summary": "s"},
            reasoning={"candidates": [[60, 120]]},
            decision={"decision": "answer", "final_answer": "HARBOR", "window": [70, 80]},
        )
    )
    policy = FalconEyePolicy(llm)
    started(policy, observation())
    action = policy.act(observation([(60, 120, "harbor", 0.85)]), LEGAL)
    assert action == AnswerAction("HARBOR", Interval(70, 80))


@pytest.mark.parametrize(
    ("answer", "accepted"),
    [("I cannot tell from these frames.", False), ("", False), ("HARBOR", True)],
)
def test_the_offline_reasoner_rejects_non_answers(answer: str, accepted: bool) -> None:
    policy = FalconEyePolicy(None)
    started(policy, observation())
    action = policy.act(observation([(60, 120, answer, 0.85)]), LEGAL)
    assert isinstance(action, AnswerAction) is accepted
    assert is_non_answer(answer) is not accepted


def test_windows_over_60_s_do_not_end_the_search_unless_allowed() -> None:
    obs = observation([(0, 120, "B", 0.99)], options=MCQ)
    strict = FalconEyePolicy(None)
    started(strict, observation(options=MCQ))
    assert not isinstance(strict.act(obs, LEGAL), AnswerAction)
    loose = FalconEyePolicy(None, max_answer_window_s=None)
    started(loose, observation(options=MCQ))
    assert loose.act(obs, LEGAL) == AnswerAction("B", Interval(0, 120))


@pytest.mark.parametrize(("near_check", "answers"), [(True, True), (False, False)])
def test_near_threshold_check_is_an_option(near_check: bool, answers: bool) -> None:
    llm = RuleLLM(
        rule_with(
            summary={"summary": "s"},
            reasoning={"candidates": [[60, 120]]},
            decision={"decision": "answer", "final_answer": "HARBOR", "window": [60, 120]},
        )
    )
    policy = FalconEyePolicy(llm, near_threshold_check=near_check)
    started(policy, observation())
    action = policy.act(observation([(60, 120, "HARBOR", 0.75)]), LEGAL)  # 0.8 - 0.1 < 0.75
    assert isinstance(action, AnswerAction) is answers
    decision = next(p for p in llm.prompts if DECISION in p)
    assert ('"answer": a response answers' in decision) is near_check


# -- 2, 3, 4, 5: reasoning, explored captions, the decision's input, the summary ---------


def test_reasoning_may_pick_no_clip_and_that_ends_the_search() -> None:
    llm = RuleLLM(
        rule_with(
            summary={"summary": "s"},
            reasoning={"candidates": []},
            final={"final_answer": "MAPLE", "window": [0, 60]},
        )
    )
    policy = FalconEyePolicy(llm, whole_video_first=False)
    action = started(policy, observation())
    assert llm.count(REASONING) == 1
    assert llm.count(FINAL) == 0  # nothing evaluated: nothing to decide from
    assert isinstance(action, AnswerAction)  # m = 0: no offline top-3 fallback


def test_m_candidates_up_to_n_in_the_llm_order() -> None:
    picks = [[120, 180], [0, 60], [60, 120]]
    llm = RuleLLM(rule_with(summary={"summary": "s"}, reasoning={"candidates": picks}))
    policy = FalconEyePolicy(llm, n_candidates=2, whole_video_first=False)
    first = started(policy, observation())
    assert first == EvaluateAction((Interval(120, 180),))
    assert policy.queue == [Interval(0, 60)]  # m <= n = 2
    reasoning = next(p for p in llm.prompts if REASONING in p)
    assert "not necessarily 2" in reasoning and "Choose the 3" not in reasoning


def test_explored_captions_are_removed_from_the_reasoning_input() -> None:
    llm = RuleLLM(
        rule_with(
            summary={"summary": "s"},
            reasoning={"candidates": [[0, 60]]},
            decision={"decision": "reason"},
        )
    )
    policy = FalconEyePolicy(llm, whole_video_first=False)
    started(policy, observation())
    policy.act(observation([(0, 60, "a kitchen", 0.2)]), LEGAL)
    first, second = [p for p in llm.prompts if REASONING in p]
    assert CAPTIONS[(0, 60)] in first
    assert CAPTIONS[(0, 60)] not in second
    assert CAPTIONS[(60, 120)] in second and "explored" not in second.split("```")[3]


def test_the_decision_sees_summary_captions_and_zooms_into_any_number() -> None:
    llm = RuleLLM(
        rule_with(
            summary={"summary": "A kitchen, a street, a park."},
            reasoning={"candidates": [[0, 60], [60, 120]]},
            decision={
                "decision": "zoom",
                "zoom": [{"start_s": "0s", "end_s": "60s"}, {"start_s": 60, "end_s": 120}],
            },
        )
    )
    policy = FalconEyePolicy(llm, whole_video_first=False)
    started(policy, observation())
    policy.act(observation([(0, 60, "MAPLE", 0.3)]), LEGAL)
    action = policy.act(observation([(0, 60, "MAPLE", 0.3), (60, 120, "HARBOR", 0.5)]), LEGAL)
    decision = next(p for p in llm.prompts if DECISION in p)
    assert "A kitchen, a street, a park." in decision
    assert (
        '[0-60s] answer: "MAPLE" | confidence: 0.30 | caption: a kitchen with white cabinets'
        in decision
    )
    assert "[60-120s]" in decision and CAPTIONS[(60, 120)] in decision
    zoom = [action.windows[0], *policy.queue]  # type: ignore[union-attr]
    assert zoom == children(Interval(0, 60)) + children(Interval(60, 120))  # both windows


def test_the_summary_is_question_independent_and_built_once_per_video() -> None:
    llm = RuleLLM(rule_with(summary={"summary": "s"}, reasoning={"candidates": [[0, 60]]}))
    policy = FalconEyePolicy(llm, whole_video_first=False)
    started(policy, observation(question="What is written on the street sign?"))
    started(policy, observation(question="What colour is the fountain?"))
    summaries = [p for p in llm.prompts if SUMMARY in p]
    assert len(summaries) == 1
    assert "street sign?" not in summaries[0] and CAPTIONS[(0, 60)] in summaries[0]
    assert llm.count(REASONING) == 2


def test_the_final_decision_when_the_budget_is_spent() -> None:
    llm = RuleLLM(
        rule_with(summary={"summary": "s"}, final={"final_answer": "ZENITH", "window": [60, 80]})
    )
    policy = FalconEyePolicy(llm)
    obs = observation([(60, 120, "C", 0.4)], options=MCQ, budget=0)
    action = started(policy, obs)
    assert action == AnswerAction("ZENITH", Interval(60, 80))
    final = next(p for p in llm.prompts if FINAL in p)
    assert "caption: a busy city street" in final


def test_whole_video_first_is_the_released_default() -> None:
    llm = RuleLLM(rule_with(summary={"summary": "s"}, reasoning={"candidates": [[60, 120]]}))
    policy = FalconEyePolicy(llm)
    assert started(policy, observation()) == EvaluateAction((Interval(0, 180),))
    assert llm.count(REASONING) == 0
    action = policy.act(observation([(0, 180, "HARBOR", 0.99)]), LEGAL)
    assert action == EvaluateAction((Interval(60, 120),))  # over 60 s: no answer, no zoom
    assert llm.count(REASONING) == 1 and llm.count(DECISION) == 0
    off = FalconEyePolicy(llm, whole_video_first=False)
    assert started(off, observation()) == EvaluateAction((Interval(60, 120),))


# -- helpers -------------------------------------------------------------------------------


def test_clip_tree_is_60_20_5_and_short_windows_are_not_zoomed() -> None:
    assert children(Interval(0, 60)) == [Interval(0, 20), Interval(20, 40), Interval(40, 60)]
    assert children(Interval(20, 40)) == [Interval(20 + 5 * k, 25 + 5 * k) for k in range(4)]
    assert children(Interval(0, 5)) == []
    policy = FalconEyePolicy(None)
    assert policy._zoomable(Interval(0, 20)) and not policy._zoomable(Interval(0, 8))


def test_decision_and_candidate_parsing() -> None:
    assert candidate_windows([{"start_s": "10s", "end_s": "20s"}, [20, 30], [0, 180]], 180) == [
        Interval(10, 20),
        Interval(20, 30),
    ]  # the whole video is skipped, as the released code does
    assert Decision.parse({"decision": "maybe"}, 180, allow_answer=True) is None
    not_offered = Decision.parse(
        {"decision": "answer", "final_answer": "A"}, 180, allow_answer=False
    )
    assert not_offered == Decision("reason")
    assert Decision.parse(
        {"decision": "answer", "final_answer": "Nan"}, 180, allow_answer=True
    ) == (Decision("reason"))


def test_falconeye_with_an_llm_runs_an_episode() -> None:
    rule = rule_with(
        summary={"summary": "s"},
        reasoning={"candidates": [[0, 60], [60, 120]]},
        decision={"decision": "zoom", "zoom": [[60, 120]]},
        final={"final_answer": "B", "window": [60, 80]},
    )
    llm = RuleLLM(rule)
    env = ZoomEnv("synth-tiny", budget=10)
    record = run_episode(
        env, FalconEyePolicy(llm, whole_video_first=False), seed=0, options={"index": 0}
    )
    assert record["error"] is None and record["ended_by"] == "answer"
    assert record["llm_calls"] == len(llm.prompts)
    explored = [tuple(e[:2]) for e in record["explored"] if e[2] == "evaluate"]
    assert explored[:2] == [(0.0, 60.0), (60.0, 120.0)]  # the LLM's candidates, one per step
    if len(explored) > 2:
        assert (60.0, 80.0) in explored  # then the zoom into [60, 120] (20 s pieces)


# -- issue 26: the released decision input and the released zoom split -------------------


@pytest.mark.parametrize(("decision_input", "sees_first_batch"), [("batch", False), ("all", True)])
def test_the_decision_sees_the_last_batch_as_released(
    decision_input: str, sees_first_batch: bool
) -> None:
    llm = RuleLLM(
        rule_with(
            summary={"summary": "s"},
            reasoning={"candidates": [[60, 120]]},
            decision={"decision": "reason"},
        )
    )
    policy = FalconEyePolicy(llm, decision_input=decision_input)
    assert started(policy, observation()) == EvaluateAction((Interval(0, 180),))  # batch 1
    assert policy.act(observation([(0, 180, "HARBOR", 0.5)]), LEGAL) == EvaluateAction(
        (Interval(60, 120),)
    )  # batch 2
    policy.act(observation([(0, 180, "HARBOR", 0.5), (60, 120, "MAPLE", 0.3)]), LEGAL)
    decision = next(p for p in llm.prompts if DECISION in p)
    assert "[60-120s]" in decision
    assert ("[0-180s]" in decision) is sees_first_batch


def test_an_open_answer_at_exactly_the_threshold_does_not_stop() -> None:
    # float32 observations: 0.8 reads back as 0.80000001, which must not pass 0.8
    policy = FalconEyePolicy(whole_video_first=False)  # offline: accepts what passes
    started(policy, observation())
    assert not isinstance(policy.act(observation([(60, 120, "HARBOR", 0.8)]), LEGAL), AnswerAction)
    assert isinstance(policy.act(observation([(60, 120, "HARBOR", 0.81)]), LEGAL), AnswerAction)


def test_partial_windows_drop_their_remainder_as_released() -> None:
    assert children(Interval(0, 50)) == [Interval(0, 20), Interval(20, 40)]  # int(50 / 20)
    assert children(Interval(100, 130)) == [Interval(100, 120)]
    assert children(Interval(0, 180)) == [Interval(0, 60), Interval(60, 120), Interval(120, 180)]
    assert children(Interval(0, 12)) == [Interval(0, 5), Interval(5, 10)]
    # the library's earlier even split stays a setting
    assert children(Interval(0, 50), "even") == [Interval(0, 25), Interval(25, 50)]
    assert len(children(Interval(0, 180), "even")) == 9
    policy = FalconEyePolicy(zoom_split="even")
    assert policy.zoom_split == "even" and FalconEyePolicy().zoom_split == "released"
