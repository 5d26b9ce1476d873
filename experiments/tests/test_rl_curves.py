"""The curves of a ``video-env train rl`` run, drawn from its log."""

import json
from pathlib import Path

import pytest


def test_the_curves_of_a_run_are_drawn_from_its_log(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from experiments.videoscout_pixel.rl_curves import main, read_log

    rows = [
        {"step": 1, "groups": 0, "mean_reward": 0.0, "drawn_reward": 0.2, "accuracy": 0.1,
         "format_valid": 0.9, "turns": 3.0, "rewatch_rate": 0.0, "kl": 0.0},
        {"step": 2, "groups": 2, "mean_reward": 0.8, "drawn_reward": 0.5, "accuracy": 0.3,
         "format_valid": 0.95, "turns": 2.5, "rewatch_rate": 0.1, "kl": 0.01},
    ]  # fmt: skip
    (tmp_path / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_log(tmp_path) == rows
    assert main([str(tmp_path), "--out", str(tmp_path / "curves.png")]) == 0
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"
    two = [str(tmp_path), str(tmp_path / "log.jsonl"), "--out", str(tmp_path / "two.png")]
    assert main([*two, "--label", "free", "--label", "scored"]) == 0
    assert (tmp_path / "two.png").stat().st_size > (tmp_path / "curves.png").stat().st_size
    with pytest.raises(SystemExit):
        main([*two, "--label", "one label for two runs"])
    with pytest.raises(SystemExit):  # both default to the folder's name: one would hide
        main(two)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "log.jsonl").write_text("")
    with pytest.raises(SystemExit):
        main([str(tmp_path / "empty"), "--out", str(tmp_path / "x.png")])
