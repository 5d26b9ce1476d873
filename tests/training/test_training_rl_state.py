"""A DAPO run's saved state: a state of the first format (no settings, no commands)."""

import json
import random
from pathlib import Path

import pytest

from policies.training.rl_state import STATE_FILE, latest_state, recorded_commands
from video_env.errors import ConfigError

torch = pytest.importorskip("torch")


def first_format_state(run: Path) -> None:
    """Write a state as runs saved it before settings and commands were kept."""
    run.mkdir(parents=True, exist_ok=True)
    state = {"step": 35, "optimizer": {}, "order": random.Random(0).getstate(),
             "queue": ["q1", "q2"], "torch_rng": torch.get_rng_state(), "seconds": 3600.0,
             "base": "policies/checkpoints/videoscout_pixel_sft"}  # fmt: skip
    torch.save(state, run / STATE_FILE)


def test_a_first_format_state_takes_its_commands_from_the_runs_record(tmp_path: Path) -> None:
    run = tmp_path / "run"
    first_format_state(run)
    assert latest_state(run).commands == [], "no record: nothing to name"
    (run / "rl.json").write_text(json.dumps({"steps_done": 35, "command": "video-env train rl"}))
    resumed = latest_state(run)
    assert resumed.step == 35 and resumed.settings == {}
    assert resumed.commands == ["video-env train rl"]
    resumed.refuse_other_run(run, "policies/checkpoints/videoscout_pixel_sft",
                             {"questions": ["q2", "q1", "q3"]})  # fmt: skip
    with pytest.raises(ConfigError, match=r"queued questions \['q2'\] not given"):
        resumed.refuse_other_run(
            run, "policies/checkpoints/videoscout_pixel_sft", {"questions": ["q1"]}
        )


def test_the_record_of_a_resumed_run_names_every_call_in_order(tmp_path: Path) -> None:
    record = {"command": "third", "earlier_commands": ["first", "second"]}
    (tmp_path / "rl.json").write_text(json.dumps(record))
    assert recorded_commands(tmp_path) == ["first", "second", "third"]
    for broken in ("{not json", "[]", json.dumps({"command": 3}), ""):
        (tmp_path / "rl.json").write_text(broken)
        assert recorded_commands(tmp_path) == [], broken
    odd = {"command": "second", "earlier_commands": "first"}  # not a list: left out
    (tmp_path / "rl.json").write_text(json.dumps(odd))
    assert recorded_commands(tmp_path) == ["second"]
