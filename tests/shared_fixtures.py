"""Fixtures and test doubles shared by the library's tests and the laboratory's.

Each suite's ``conftest.py`` imports them (``tests/``, ``experiments/tests/``).
"""

import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest
from hypothesis import HealthCheck, settings

from video_env.backends.llm.base import Completion, Message
from video_env.metrics.cost import Cost
from video_env.video import write_video
from video_env.video.testing import coded_frames

# Property tests check behaviour, not speed: on a shared 2-core machine one example can
# take longer than Hypothesis's default 200 ms deadline (a flaky failure, seen in CI).
settings.register_profile("video-env", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("video-env")

CODED_FRAMES = 300
CODED_FPS = 30.0


@pytest.fixture(scope="session")
def coded_video(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A 10 s, 30 fps H.264 video (B-frames, keyframe every 24) whose frames carry their index."""
    path = tmp_path_factory.mktemp("videos") / "coded.mp4"
    write_video(path, coded_frames(CODED_FRAMES), CODED_FPS, gop=24)
    return str(path)


@pytest.fixture
def checker_warnings() -> Callable[..., list[str]]:
    """``run(check, env, **kw)``: run an env checker, return the warnings it raised."""

    def run(check: Callable[..., Any], env: Any, **kwargs: Any) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check(env, **kwargs)
        return [str(w.message) for w in caught]

    return run


@pytest.fixture(scope="session", autouse=True)
def _model_output_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Model-output caches of the test session live in pytest's temporary folders."""
    if not os.environ.get("VIDEO_ENV_CACHE_DIR"):
        os.environ["VIDEO_ENV_CACHE_DIR"] = str(tmp_path_factory.mktemp("model-cache"))


@pytest.fixture(scope="session")
def tiny_clip_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny random open_clip model saved in open_clip's local-dir layout."""
    pytest.importorskip("open_clip")
    from video_env.backends.testing_clip import tiny_open_clip

    return str(tiny_open_clip(tmp_path_factory.mktemp("models") / "tiny-clip"))


@pytest.fixture(scope="session")
def tiny_qwen_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny random Qwen2.5-VL checkpoint (model + processor), built once per session."""
    pytest.importorskip("transformers")
    from video_env.backends.testing import tiny_qwen2_5_vl

    return str(tiny_qwen2_5_vl(tmp_path_factory.mktemp("models") / "tiny-qwen2.5-vl"))


class RuleLLM:
    """An in-process LLM test double (shared by the policy tests).

    Replies with ``rule(prompt)``; records prompts; counts usage like a real backend.
    """

    name = "rule-llm"

    def __init__(self, rule: Callable[[str], str]) -> None:
        self.rule = rule
        self.prompts: list[str] = []
        self.usage = Cost()

    def chat(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        text = self.rule(prompt)
        completion = Completion(text, "rule", len(prompt) // 4, max(1, len(text) // 4))
        self.usage = self.usage + completion.cost()
        return completion

    def count(self, marker: str) -> int:
        return sum(marker in p for p in self.prompts)


def bench_records(folder: Path) -> list[dict[str, Any]]:
    """A results folder's episode records without their machine-dependent fields, by job."""
    from benchmarks.records import EpisodeLog

    out = EpisodeLog(folder).load()
    for r in out:
        r.pop("wall_s")
        r.pop("traceback")
    return sorted(out, key=lambda r: r["job"])


@pytest.fixture(scope="module")
def smoke_turns(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``turns.jsonl`` of the scripted teacher on two synth-tiny questions, cpu-smoke rules."""
    from policies.training.cli import RULES
    from policies.training.distill import DistillConfig, distill
    from policies.training.teachers import GroundTruthScriptedTeacher
    from video_env.synth.suites import load_suite

    out = tmp_path_factory.mktemp("distilled")
    config = DistillConfig().with_episode(rules=RULES["cpu-smoke"]())
    distill(GroundTruthScriptedTeacher(), load_suite("synth-tiny", limit=2), out, config)
    return out / "turns.jsonl"


def wait_for(condition: Callable[[], Any], timeout: float = 20.0) -> None:
    """Poll ``condition`` every 50 ms until it holds; fail after ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def bench_run_fixtures(args: Sequence[str]) -> tuple[Any, Any]:
    """``finished`` (``video-env bench ARGS``, once per module) and ``run`` (a copy to damage).

    Assign them in a test module: ``finished, run = bench_run_fixtures(ARGS)``.
    """
    import shutil

    from video_env.cli import main

    @pytest.fixture(scope="module")
    def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
        out = tmp_path_factory.mktemp("run")
        assert main([*args, "--out", str(out)]) == 0
        return out

    @pytest.fixture
    def run(finished: Path, tmp_path: Path) -> Path:
        return Path(shutil.copytree(finished, tmp_path / "run"))

    return finished, run


def refused_connections(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Online as far as the libraries know: every socket connection recorded and refused."""
    import socket

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise ConnectionRefusedError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return attempts


def tools_env(preset: Any, dataset: Any = "synth-tiny", **kwargs: Any) -> Any:
    """A Tools env of ``preset`` reset on its first sample (simulated perception, quiet)."""
    from video_env.envs.tools import ToolsEnv

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # simulated perception's provenance warning
        env = ToolsEnv(dataset, preset=preset, **kwargs)
        env.reset(seed=0, options={"index": 0})
    return env


def quiet_step(env: Any, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
    """``env.step(action)`` without the simulated perception's provenance warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result: tuple[dict[str, Any], float, bool, bool, dict[str, Any]] = env.step(action)
    return result
