"""Oversized actions: checked before they are described or stored; records stay bounded."""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import pytest

from video_env.actions import AnswerAction, EvaluateAction, QueryAction, SegmentQuery
from video_env.actions.validation import MAX_DESCRIPTION_CHARS
from video_env.envs import ClipQueryEnv, PacingEnv, ZoomEnv
from video_env.types import Interval

MB = 2**20


def record_size(info: dict[str, Any]) -> int:
    return len(json.dumps(info["episode"]))


def run_rejected(env: Any, action: Any, times: int = 4) -> dict[str, Any]:
    """Step ``action`` until the env truncates; each step must be fast and rejected."""
    env.reset(seed=0)
    info: dict[str, Any] = {}
    for _ in range(times):
        started = time.perf_counter()
        *_, truncated, info = env.step(action)
        assert time.perf_counter() - started < 0.5
        assert info["last_action_error"]
        assert len(env.unwrapped._episode.steps[-1].action) <= MAX_DESCRIPTION_CHARS
    assert truncated
    return info


def test_ten_thousand_queries_are_rejected_before_description() -> None:
    action = QueryAction((SegmentQuery(1, "a" * 10_000),) * 10_000)
    info = run_rejected(ClipQueryEnv("synth-tiny"), action)
    assert "at most 256" in info["episode"]["trajectory"][0]["error"]
    assert record_size(info) <= MB


def test_a_megabyte_query_text_is_rejected() -> None:
    info = run_rejected(ClipQueryEnv("synth-tiny"), QueryAction((SegmentQuery(1, "a" * MB),)))
    assert "characters long" in info["episode"]["trajectory"][0]["error"]
    assert record_size(info) <= 64 * 1024


def test_a_million_windows_are_rejected() -> None:
    action = EvaluateAction((Interval(0, 1),) * 10**6)
    info = run_rejected(ZoomEnv("synth-tiny"), action)
    assert record_size(info) <= 64 * 1024


def test_oversized_answers_and_memories_are_rejected() -> None:
    info = run_rejected(ZoomEnv("synth-tiny"), AnswerAction("A" * MB))
    assert record_size(info) <= 64 * 1024
    info = run_rejected(PacingEnv("synth-tiny"), AnswerAction("A", memory="m " * MB))
    assert "memory" in info["episode"]["trajectory"][0]["error"]


def test_dict_queries_are_bounded_by_the_space_not_the_arrays() -> None:
    env = ClipQueryEnv("synth-tiny")
    n = 10_000
    action = {"kind": 0, "n_queries": n, "segments": np.ones(n, np.int64),
              "texts": ("a" * 10_000,) * n}  # fmt: skip
    info = run_rejected(env, action)
    assert "n_queries must be between 1 and" in info["episode"]["trajectory"][0]["error"]
    assert record_size(info) <= 64 * 1024


def test_dict_windows_are_bounded_by_the_space() -> None:
    env = ZoomEnv("synth-tiny")
    action = {"kind": 0, "n_windows": 10**5, "windows": np.tile([0.0, 0.5], (10**5, 1))}
    info = run_rejected(env, action)
    assert "n_windows must be between 1 and" in info["episode"]["trajectory"][0]["error"]


def test_a_valid_action_is_described_within_the_bound() -> None:
    env = ClipQueryEnv("synth-tiny", max_queries_per_round=5)
    env.reset(seed=0)
    env.step(QueryAction(tuple(SegmentQuery(1 + i % 2, "b" * 16_000) for i in range(2))))
    assert len(env._episode.steps[-1].action) <= MAX_DESCRIPTION_CHARS


@pytest.mark.parametrize("kind", ["zoom", "clip_query"])
def test_an_episode_record_stays_under_a_megabyte(kind: str) -> None:
    env = {"zoom": ZoomEnv, "clip_query": ClipQueryEnv}[kind](
        "synth-tiny", max_invalid_actions=1000
    )
    env.reset(seed=0)
    action: Any = (
        QueryAction((SegmentQuery(10**9, "c" * 16_000),) * 256)
        if kind == "clip_query"
        else EvaluateAction((Interval(10**6, 2 * 10**6),) * 256)
    )
    for _ in range(1000):
        *_, truncated, info = env.step(action)
    *_, truncated, info = env.step(action)
    assert truncated
    assert record_size(info) <= MB
    assert info["episode"]["turns"] == 1001
    assert info["episode"]["trajectory_omitted"] == 1001 - 200
