"""Env kinds are declared once, on each env class, and read from the registered entry points."""

from __future__ import annotations

import gymnasium as gym

import video_env  # noqa: F401  (registers the ids)
from benchmarks.config import BenchConfig
from policies.base import env_kind
from policies.registry import spec
from video_env.envs import ENV_CLASSES, ENV_IDS_BY_KIND, ENV_KINDS
from video_env.envs.registration import ENTRY_POINTS


def test_each_registered_env_declares_its_kind_on_its_class() -> None:
    assert ENV_KINDS == ("pacing", "zoom", "clip_query", "tools")
    assert len(ENV_CLASSES) == len(ENTRY_POINTS)  # no two classes claim one kind
    for kind, cls in ENV_CLASSES.items():
        assert cls.kind == kind
        env = gym.make(ENV_IDS_BY_KIND[kind])
        assert env_kind(env) == kind  # through Gymnasium's wrappers
        assert isinstance(env.unwrapped, cls)
        env.close()


def test_the_bench_and_the_policies_read_the_one_list() -> None:
    assert BenchConfig().envs == ENV_KINDS
    assert spec("random").env_kinds == ENV_KINDS


def test_an_env_outside_the_list_is_named_by_its_class() -> None:
    class Elsewhere(gym.Env):  # type: ignore[type-arg]
        pass

    assert env_kind(Elsewhere()) == "Elsewhere"
