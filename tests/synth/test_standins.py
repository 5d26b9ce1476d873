"""Simulated sensors on real files and stand-ins of missing ones are never silent (60)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import jobs
from video_env.cli import main
from video_env.data import save_jsonl
from video_env.envs import ZoomEnv
from video_env.types import Interval, VideoQA
from video_env.video.open import open_video
from video_env.video.testing import coded_frames
from video_env.video.writer import write_video


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    """A real 5.3 s mp4 (53 frames at 10 fps)."""
    path = tmp_path / "videos" / "clip.mp4"
    path.parent.mkdir()
    write_video(path, coded_frames(53), 10.0)
    return path


def bench_args(annotations: Path, videos: Path, out: Path) -> list[str]:
    """A serial, quiet Zoom bench of ``uniform`` over a JSONL of the clip folder."""
    return ["bench", "--dataset", "jsonl", "--annotations", str(annotations), "--videos",
            str(videos), "--envs", "zoom", "--policies", "uniform", "--quiet", "--no-plots",
            "--executor", "serial", "--out", str(out)]  # fmt: skip


def sample(path: Path, i: int = 0) -> VideoQA:
    return VideoQA(
        id=f"q{i}", video=str(path), question="What colour is the cup?",
        options=("red", "blue"), answer="A", gt_intervals=(Interval(1.0, 2.0),),
    )  # fmt: skip


def test_simulated_sensors_read_a_world_as_long_as_the_file(clip: Path) -> None:
    with open_video(clip) as reader:
        duration = reader.duration
    env = ZoomEnv([sample(clip)])
    with pytest.warns(UserWarning, match="simulated sensors on real video"):
        env.reset(seed=0)
    assert env.video.duration == pytest.approx(duration)  # was 65 s (interval end + 60)
    assert env.video.world.duration == pytest.approx(duration)  # type: ignore[attr-defined]
    assert 5.0 < duration < 5.6
    *_, info = env.step(env.action_space.sample() | {"kind": 1, "answer": "A", "has_window": 0})
    episode = info["episode"]
    assert episode["sensors_on_real_video"] is True and episode["simulated"] is True
    assert episode["standin"] is False


def test_synthetic_episodes_are_not_standins() -> None:
    env = ZoomEnv("synth-tiny")
    env.reset(seed=0)
    *_, info = env.step(env.action_space.sample() | {"kind": 1, "answer": "A", "has_window": 0})
    assert info["episode"]["standin"] is False


def test_a_bench_on_real_files_says_its_sensors_are_simulated(
    clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs, "_SAMPLES", {})
    annotations = save_jsonl([sample(clip, i) for i in range(3)], tmp_path / "qa.jsonl",
                             video_root=clip.parent)  # fmt: skip
    out = tmp_path / "run"
    args = bench_args(annotations, clip.parent, out)
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "3 sample(s) ran simulated sensors on real video" in printed  # the header
    assert "3 of 3 episodes ran simulated sensors on real video" in printed
    meta = json.loads((out / "run.json").read_text())
    assert meta["sensors_on_real_video_samples"] == 3 and meta["standin_samples"] == 0
    assert meta["sensors_on_real_video_episodes"] == 3 and meta["standin_episodes"] == 0
    assert "answered from the annotations" in meta["sensors_on_real_video_note"]
    assert "simulated sensors on real video" in (out / "summary.csv").read_text()
    assert "3 of 3 episodes ran simulated sensors" in (out / "summary.md").read_text()
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert [(r["standin"], r["sensors_on_real_video"]) for r in records] == [(False, True)] * 3


def test_a_bench_with_missing_files_stops_unless_stand_ins_are_asked_for(
    clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs, "_SAMPLES", {})
    gone = clip.parent / "gone.mp4"
    annotations = save_jsonl([sample(clip, 0), sample(gone, 1)], tmp_path / "qa.jsonl",
                             video_root=clip.parent)  # fmt: skip
    out = tmp_path / "run"
    args = bench_args(annotations, clip.parent, out)
    assert main(args) == 2
    assert "1 of 2 video files are missing" in capsys.readouterr().err
    monkeypatch.setattr(jobs, "_SAMPLES", {})
    assert main([*args, "--standin-missing-videos"]) == 0
    printed = capsys.readouterr().out
    assert "1 sample(s) ran on simulated stand-ins of missing video files" in printed
    assert "simulated (1 of 2 on stand-ins, 1 on real video)" in printed
    assert printed.count("Perception: SIMULATED") == 1  # one note for the run's one row
    assert "1 of 2 episodes ran on simulated stand-ins" in printed
    meta = json.loads((out / "run.json").read_text())
    assert meta["standin_episodes"] == 1 and meta["sensors_on_real_video_episodes"] == 1


def test_a_corrupt_file_is_recorded_with_the_decoders_reason_and_the_others_run(
    clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs, "_SAMPLES", {})
    broken = clip.parent / "broken.mp4"
    broken.write_bytes(clip.read_bytes()[:300])  # truncated: the header only
    samples = [sample(clip, 0), sample(broken, 1), sample(clip, 2)]
    annotations = save_jsonl(samples, tmp_path / "qa.jsonl", video_root=clip.parent)
    out = tmp_path / "run"
    args = bench_args(annotations, clip.parent, out)
    assert main(args) == 0
    records = {r["sample_id"]: r for r in map(json.loads, (out / "episodes.jsonl").open())}
    assert (
        records["q1"]["error"].startswith("VideoDecodeError")
        and "broken.mp4" in (records["q1"]["error"])
    )
    assert records["q0"]["error"] is None and records["q2"]["error"] is None
