"""Flags from settings dataclasses: one flag a field, its default and help the field's."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace

import pytest

from benchmarks.cli import bench_settings
from benchmarks.config import BenchConfig, RunSettings
from benchmarks.plot_style import PlotOptions
from policies.cli import PACING_FLAGS
from policies.episode_settings import EpisodeSettings
from policies.training.cli_recipe import DISTILL_FLAGS, SFT_FLAGS
from policies.training.cli_rl import RL_FLAGS, TRL_FLAGS, TRLRunSettings
from policies.training.distill import DistillConfig
from policies.training.pacing import TrainConfig
from policies.training.rl import DAPOConfig
from policies.training.sft import SFTSettings
from video_env.cli import build_parser
from video_env.cli.flags import add_flags, field_docs, from_flags


@dataclass(frozen=True)
class Inner:
    """Inner settings.

    Attributes:
        eps: A small number, whose text goes on
            over two lines.
        tag: A name.
    """

    eps: float = 0.2
    tag: str = "a"


@dataclass(frozen=True)
class Outer:
    """Outer settings.

    Attributes:
        learning_rate: Step size.
        steps: Steps (100%).
        budget: Seconds at most.
        checkpointing: Trade compute for memory.
        quiet: Say less.
        inner: The inner part.
        kept: Set by the command.
        notes: Python's only.
    """

    learning_rate: float = 1e-3
    steps: int = 100
    budget: float | None = None
    checkpointing: bool = True
    quiet: bool = False
    inner: Inner = field(default_factory=Inner)
    kept: tuple[str, ...] = ("x",)
    notes: dict[str, str] = field(default_factory=dict)


def test_field_docs_reads_the_attributes_section_with_its_continuations() -> None:
    docs = field_docs(Inner)
    assert docs == {"eps": "A small number, whose text goes on over two lines.", "tag": "A name."}


def test_flags_round_trip_with_names_nesting_choices_and_given_fields() -> None:
    parser = argparse.ArgumentParser()
    names = {"learning_rate": "--lr"}
    add_flags(
        parser, Outer(), names=names, skip=("kept", "notes"), choices={"inner.tag": ("a", "b")}
    )
    defaults = from_flags(Outer(), parser.parse_args([]), names=names)
    assert defaults == Outer()
    args = parser.parse_args(
        ["--lr", "0.5", "--steps", "3", "--budget", "9.5", "--no-checkpointing", "--quiet",
         "--eps", "0.3", "--tag", "b"]
    )  # fmt: skip
    built = from_flags(Outer(), args, names=names, kept=("y",), inner__eps=0.4)
    assert built == Outer(0.5, 3, 9.5, False, True, Inner(0.4, "b"), ("y",))
    with pytest.raises(SystemExit):
        parser.parse_args(["--tag", "c"])  # not a choice
    with pytest.raises(SystemExit):
        parser.parse_args(["--kept", "z"])  # skipped: no flag
    helps = {a.dest: a.help for a in parser._actions}
    assert helps["steps"] == "Steps (100%%). (default: 100)"  # argparse's % escaped
    assert helps["eps"].startswith("A small number, whose text goes on over two lines.")


def test_a_field_no_flag_can_carry_must_be_skipped() -> None:
    with pytest.raises(TypeError, match=r"Outer\.notes"):
        add_flags(argparse.ArgumentParser(), Outer())


def test_a_tuple_field_takes_one_or_more_values_and_builds_a_tuple() -> None:
    parser = argparse.ArgumentParser()
    add_flags(parser, Outer(), skip=("notes",))
    assert from_flags(Outer(), parser.parse_args([]), skip=("notes",)).kept == ("x",)
    built = from_flags(Outer(), parser.parse_args(["--kept", "y", "z"]), skip=("notes",))
    assert built.kept == ("y", "z")
    with pytest.raises(SystemExit):
        parser.parse_args(["--kept"])  # one value at least
    helps = {a.dest: a.help for a in parser._actions}
    assert helps["kept"] == "Set by the command. (default: x)"


def _parsed(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_every_train_commands_defaults_are_its_settings_defaults() -> None:
    """Each default is written once, in the settings: the bare command builds them."""
    start = ("--model", "m", "--out", "o")
    assert RL_FLAGS.build(_parsed("train", "rl", *start)) == DAPOConfig()
    assert TRL_FLAGS.build(_parsed("train", "trl", *start)) == TRLRunSettings()
    sft = _parsed("train", "sft", "--model", "m", "--data", "d", "--out", "o")
    assert SFT_FLAGS.build(sft, progress_bar=True) == SFTSettings()
    distill = _parsed("train", "distill", "--teacher", "t", "--out", "o")
    assert DISTILL_FLAGS.build(distill) == DistillConfig()
    pacing = _parsed("train", "pacing")
    assert PACING_FLAGS.build(pacing, sensors=("vlm",)) == TrainConfig()
    # the DAPO defaults TRL's route shares are DAPOConfig's own
    dapo = DAPOConfig()
    assert (TRLRunSettings().steps, TRLRunSettings().learning_rate) == (dapo.steps, 5e-6)
    assert (
        TRLRunSettings().episode
        == dapo.episode
        == EpisodeSettings(max_new_tokens=4096, temperature=1.0)
    )


def test_a_flag_sets_its_field_in_the_run_settings() -> None:
    start = ("train", "rl", "--model", "m", "--out", "o")
    args = _parsed(*start, "--max-turns", "5", "--lr", "1", "--seed", "3")
    config = RL_FLAGS.build(args)  # --seed is the dataset flags': still the run's seed
    assert config == replace(DAPOConfig(), learning_rate=1.0, seed=3).with_episode(max_turns=5)
    trl = TRL_FLAGS.build(
        _parsed("train", "trl", *start[2:], "--seed", "4", "--no-gradient-checkpointing")
    )
    assert (trl.seed, trl.gradient_checkpointing) == (4, False)


def test_the_bare_bench_command_builds_exactly_its_settings_defaults() -> None:
    """``video-env bench`` alone evaluates ``BenchConfig()`` and runs as ``RunSettings()``."""
    config, settings = bench_settings(_parsed("bench"))
    assert config == BenchConfig()
    assert settings == RunSettings()
    assert settings.plot_options == PlotOptions()


def test_each_bench_flag_sets_its_field() -> None:
    args = _parsed(
        "bench", "--suite", "synth-tiny", "--envs", "all", "--policies", "random", "uniform",
        "--seeds", "0", "1", "--categories", "visual", "--max-steps", "9", "--limit", "3",
        "--text-embedder", "minilm", "--workers", "2", "--no-plots", "--plot-dpi", "99",
        "--fresh", "--out", "o",
    )  # fmt: skip
    config, settings = bench_settings(args)
    assert config == replace(
        BenchConfig(), suite="synth-tiny", policies=("random", "uniform"), seeds=(0, 1),
        categories=("visual",), max_steps=9, limit=3, text_embedder="minilm",
    )  # fmt: skip
    assert settings == RunSettings(
        out="o", fresh=True, workers=2, plots=False, plot=PlotOptions(dpi=99)
    )
    assert settings.plot_options is False
    envs, _ = bench_settings(_parsed("bench", "--envs", "zoom"))
    assert envs.envs == ("zoom",)


def test_bench_report_takes_the_run_settings_figure_flags() -> None:
    args = _parsed("bench", "report", "runs/x", "--plot-format", "svg")
    from benchmarks.cli import PLOT_FLAGS

    assert PLOT_FLAGS.build(args) == PlotOptions(format="svg")
