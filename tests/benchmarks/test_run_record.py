"""The command line a run records: the console script's, or the laboratory's own command."""

from __future__ import annotations

import pytest


def test_a_lab_command_is_recorded_as_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from video_env.run_record import command_line, recorded_as

    monkeypatch.setattr(sys, "argv", ["/x/__main__.py", "sft", "--option-orders", "4"])
    assert command_line() == "video-env sft --option-orders 4"  # the console script's
    with recorded_as("python -m experiments.videoscout_pixel"):
        assert command_line() == "python -m experiments.videoscout_pixel sft --option-orders 4"
    assert command_line().startswith("video-env ")
