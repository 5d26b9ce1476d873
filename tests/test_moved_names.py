"""Commands and names that moved (to the laboratory, or to the policies) say where they went."""

from __future__ import annotations

import importlib

import pytest

from video_env.cli import main


@pytest.mark.parametrize("kind", ["perception", "vlm"])
def test_training_the_pixel_worlds_models_names_the_laboratorys_command(
    kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["train", kind, "--steps", "3", "--out", "x"]) == 2
    assert f"python -m experiments.pixel_models {kind}" in capsys.readouterr().err


def test_the_recipes_lab_flags_and_teacher_name_the_laboratorys_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["train", "sft", "--model", "m", "--data", "d", "--out", "o", "--binding", "1"])
    assert "--binding is the laboratory's: python -m experiments.videoscout_pixel sft" in (
        capsys.readouterr().err
    )
    args = ["train", "distill", "--teacher", "scripted-frames:lead", "--out", "o"]
    assert main([*args, "--suite", "synth-tiny", "--limit", "1"]) == 2
    assert "python -m experiments.videoscout_pixel distill" in capsys.readouterr().err


def test_moved_python_names_say_where_they_went() -> None:
    with pytest.raises(ImportError, match=r"policies\.checkpoints\.VIDEOSCOUT_SFT_DIR"):
        importlib.import_module("video_env.pixel").__getattr__("VIDEOSCOUT_DIR")
    with pytest.raises(ImportError, match=r"policies\.checkpoints"):
        exec("from video_env.pixel import VIDEOSCOUT_DAPO_DIR", {})
    with pytest.raises(ImportError, match=r"policies\.videoscout_record"):
        exec("from video_env.envs.rules_record import trained_rules", {})
    record = importlib.import_module("video_env.envs.rules_record")
    assert record.rules_name is importlib.import_module("video_env.envs.pacing_rules").rules_name
    assert not hasattr(record, "__path__")  # the import system's lookups are plain misses


def test_a_lab_command_is_recorded_as_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from video_env.run_record import command_line, recorded_as

    monkeypatch.setattr(sys, "argv", ["/x/__main__.py", "sft", "--option-orders", "4"])
    assert command_line() == "video-env sft --option-orders 4"  # the console script's
    with recorded_as("python -m experiments.videoscout_pixel"):
        assert command_line() == "python -m experiments.videoscout_pixel sft --option-orders 4"
    assert command_line().startswith("video-env ")
