"""What a researcher reads: policy names as tables print them, the run header, plot styling."""

from pathlib import Path

import pytest

import policies
from benchmarks.config import BenchConfig
from video_env import ConfigError, UnknownNameError


def test_schedule_names_are_the_names_tables_print() -> None:
    for name in ("pacing-1x", "pacing-4x", "pacing-2x@0.8", "pacing-4x@0.65", "pacing-2x"):
        assert policies.make(name).name == name
    assert "pacing-2x@0.8" in policies.available()
    assert "pacing-threshold" not in policies.available()
    assert policies.make("pacing-threshold").name == "pacing-2x@0.8"  # the old name still runs
    with pytest.raises(ConfigError, match="threshold"):
        policies.spec("pacing-2x@1.5")
    with pytest.raises(UnknownNameError):
        policies.spec("pacing-3x")


def test_the_header_lists_the_envs_that_run() -> None:
    from benchmarks.cli import header

    config = BenchConfig(suite="synth-tiny", policies=("pacing-1x", "sequential"))
    from benchmarks.jobs import resolve_policies

    line = header(config, resolve_policies(config), Path("out"), "serial", 1).splitlines()[0]
    assert "| envs pacing zoom |" in line  # clip_query has none of these policies


def test_plot_colours_are_stable_and_fronts_are_pareto() -> None:
    pytest.importorskip("matplotlib")
    from benchmarks.plots import base_name, pareto_front, policy_colour

    assert base_name("falconeye[offline]") == "falconeye"
    assert base_name("pacing-ppo:runs/x") == "pacing-ppo"
    assert base_name("my_mod:MyPolicy") == "my_mod:MyPolicy"
    assert policy_colour("falconeye[offline]") == policy_colour("falconeye")
    assert policy_colour("falconeye") != policy_colour("sequential")
    assert policy_colour("my_mod:MyPolicy") == policy_colour("my_mod:MyPolicy")  # every run
    points = [(10.0, 0.5), (5.0, 0.2), (20.0, 0.4), (30.0, 0.9), (5.0, 0.3)]
    assert pareto_front(points) == [(5.0, 0.3), (10.0, 0.5), (30.0, 0.9)]
