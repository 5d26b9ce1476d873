"""Results from the tiny test builders' random-weights checkpoints are labelled as such."""

import json
from pathlib import Path

import pytest

from benchmarks.cli import header
from benchmarks.config import BenchConfig
from benchmarks.summary import perception_label
from video_env.backends.random_weights import LABEL, has_random_weights
from video_env.cli import main


def test_the_builders_mark_their_folders_and_the_shipped_weights_are_not_marked(
    tiny_clip_dir: str, tiny_qwen_dir: str
) -> None:
    from video_env.pixel import WEIGHTS_DIR

    assert has_random_weights(tiny_clip_dir) and has_random_weights(tiny_qwen_dir)
    assert not has_random_weights(WEIGHTS_DIR) and not has_random_weights(None)


def test_a_backend_from_a_marked_folder_says_so(tiny_clip_dir: str) -> None:
    from video_env.backends.openclip import OpenCLIP
    from video_env.envs.perception import Perception

    clip = OpenCLIP(tiny_clip_dir)
    assert clip.random_weights
    assert Perception(clip=clip).random_weights and not Perception.offline().random_weights


def test_summary_rows_and_the_header_name_random_weights(
    tiny_clip_dir: str, tiny_qwen_dir: str
) -> None:
    records = [{"simulated": False, "random_weights": True}]
    assert perception_label(records) == f"real, {LABEL}"
    assert perception_label([{"simulated": False}]) == "real"
    config = BenchConfig(suite="synth-tiny", envs=("clip_query",), clip=tiny_clip_dir)
    assert config.random_weight_sources() == ["clip"]
    from benchmarks.jobs import resolve_policies

    assert LABEL.upper() in header(config, resolve_policies(config), Path("out"), "serial", 1)
    assert BenchConfig(suite="synth-tiny").random_weight_sources() == []
    named = f"videoscout:qwen2.5-vl:{tiny_qwen_dir}?guided=true"  # settings after the folder
    config = BenchConfig(suite="synth-tiny", envs=("pacing",), policies=(named,))
    assert config.random_weight_sources() == [named]


def test_a_run_on_a_random_clip_says_so_in_run_json_and_summary(
    tiny_clip_dir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["bench", "--suite", "synth-tiny", "--envs", "clip_query", "--policies", "random",
            "--clip", tiny_clip_dir, "--limit", "1", "--executor", "serial", "--quiet",
            "--no-plots", "--out", str(tmp_path)]  # fmt: skip
    assert main(args) == 0
    assert LABEL.upper() in capsys.readouterr().out
    assert json.loads((tmp_path / "run.json").read_text())["random_weights"] == ["clip"]
    assert LABEL.upper() in (tmp_path / "summary.md").read_text()
