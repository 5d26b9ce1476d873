"""Backends by name: spec parsing, env arguments, labels, errors that say what to do."""

import time
from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from video_env.backends.base import Answer, FrameBatch
from video_env.backends.registry import (
    BackendSpec,
    check_local_weights,
    make_backend,
    parse_spec,
    spec_is_simulated,
    validate_spec,
)
from video_env.backends.simulated import SimulatedCaptioner, SimulatedCLIP, SimulatedVLM
from video_env.envs.perception import Perception, resolve_perception
from video_env.errors import BackendError, ConfigError, UnknownNameError
from video_env.metrics.cost import Cost
from video_env.synth import load_suite


class RealishVLM:
    """A deterministic non-simulated VLM + captioner (stands in for a real model)."""

    name = "realish"
    simulated = False

    def __init__(self) -> None:
        self.usage = Cost()
        self.config: dict[str, object] = {"backend": "realish"}

    def answer(
        self, frames: FrameBatch, question: str, options: Sequence[str] | None = None
    ) -> Answer:
        return Answer("A" if options else "a thing", 0.7, (0.7,), 4)

    def caption(self, frames: FrameBatch, max_tokens: int = 64, style: str = "light") -> str:
        return f"frames at {float(frames.times[0]):.0f} s"


def test_parse_specs(tmp_path: Path) -> None:
    assert parse_spec("vlm", "simulated") == BackendSpec("simulated")
    assert parse_spec("vlm", "qwen2.5-vl:Qwen/Qwen2.5-VL-7B-Instruct") == BackendSpec(
        "transformers", "Qwen/Qwen2.5-VL-7B-Instruct"
    )
    assert parse_spec("captioner", "transformers:/m").kind == "transformers"
    assert parse_spec("vlm", "openai:gpt-4o-mini") == BackendSpec("openai", "gpt-4o-mini")
    assert parse_spec("clip", "open_clip:ViT-B-32:laion2b_s34b_b79k") == BackendSpec(
        "open_clip", "ViT-B-32", "laion2b_s34b_b79k"
    )
    assert parse_spec("clip", "open_clip:EVA02-B-16") == BackendSpec("open_clip", "EVA02-B-16")
    assert parse_spec("clip", "open_clip:hf-hub:org/repo") == BackendSpec(
        "open_clip", "hf-hub:org/repo"
    )
    assert parse_spec("clip", str(tmp_path)) == BackendSpec("open_clip", str(tmp_path))
    assert parse_spec("vlm", str(tmp_path)) == BackendSpec("transformers", str(tmp_path))
    known = r"known: open_clip:\.\.\., pixel-real:\.\.\., simulated$"
    with pytest.raises(UnknownNameError, match=known) as info:
        parse_spec("clip", "qwen2.5-vl:x")
    assert "simulated:" not in str(info.value)  # `simulated` takes no model
    with pytest.raises(UnknownNameError):
        parse_spec("vlm", "open_clip:ViT-B-32")
    with pytest.raises(ConfigError, match="no such folder"):
        parse_spec("clip", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="names no model"):
        parse_spec("vlm", "openai:")
    with pytest.raises(UnknownNameError, match="perception role"):
        parse_spec("judge", "simulated")
    assert spec_is_simulated("vlm", None) and not spec_is_simulated("vlm", "openai:m")


def test_simulated_specs_build_simulated_backends() -> None:
    assert isinstance(make_backend("vlm", "simulated", seed=3), SimulatedVLM)
    assert isinstance(make_backend("captioner", "simulated"), SimulatedCaptioner)
    assert isinstance(make_backend("clip", "simulated"), SimulatedCLIP)
    vlm = RealishVLM()
    assert make_backend("vlm", vlm) is vlm  # objects pass through


def test_uncached_hub_id_fails_fast_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    with pytest.raises(BackendError, match=r"HF_HUB_OFFLINE.*qwen2\.5-vl:DIR"):
        make_backend("vlm", "qwen2.5-vl:Qwen/Qwen2.5-VL-7B-Instruct")
    with pytest.raises(BackendError, match="not in the local Hugging Face cache"):
        validate_spec("vlm", "qwen2.5-vl:Qwen/Qwen2.5-VL-7B-Instruct")
    assert time.perf_counter() - started < 5
    check_local_weights(".")  # a local folder needs no cache


def test_env_arguments_pick_backends_and_label_results(tiny_clip_dir: str) -> None:
    env = gym.make("VideoEnv/ClipQuery-v0", dataset="synth-tiny", clip=tiny_clip_dir)
    inner = env.unwrapped
    from video_env.backends.openclip import OpenCLIP

    assert isinstance(inner.perception.clip, OpenCLIP)  # type: ignore[attr-defined]
    assert isinstance(inner.perception.captioner, SimulatedCaptioner)  # type: ignore[attr-defined]
    _, info = env.reset(seed=0)
    assert info["simulated"] is True  # the captioner is simulated

    real = RealishVLM()
    env = gym.make(
        "VideoEnv/ClipQuery-v0", dataset="synth-tiny", captioner=real, clip=tiny_clip_dir
    )
    _, info = env.reset(seed=0)
    assert info["simulated"] is False

    zoom = gym.make("VideoEnv/Zoom-v0", dataset="synth-tiny", vlm=real)
    assert zoom.unwrapped.perception.captioner is real  # type: ignore[attr-defined]
    assert zoom.unwrapped.perception.clip is None  # type: ignore[attr-defined]  # unused role dropped
    _, info = zoom.reset(seed=0)
    assert info["simulated"] is False


def test_resolve_perception() -> None:
    assert resolve_perception(None).simulated
    assert resolve_perception("simulated").simulated
    with pytest.raises(ConfigError, match="give 'simulated'"):
        resolve_perception("qwen")
    base = Perception.offline()
    real = RealishVLM()
    mixed = resolve_perception(base, vlm=real)
    assert mixed.vlm is real and mixed.captioner is base.captioner and mixed.clip is base.clip
    only = Perception.from_specs(vlm=real, clip="simulated")
    assert only.captioner is real and isinstance(only.clip, SimulatedCLIP)
    assert not only.for_roles("vlm", "captioner").simulated
    with pytest.raises(ConfigError, match="needs perception backends: clip"):
        Perception(vlm=real).for_roles("vlm", "clip")


def test_real_vlm_specs_resolve_through_part_a(tmp_path: Path) -> None:
    """After the merge: qwen2.5-vl:DIR builds a cached TransformersVLM around one shared model."""
    pytest.importorskip("video_env.backends.transformers_vlm")
    testing = pytest.importorskip("video_env.backends.testing")
    from video_env.cache import CachedCaptioner, CachedVLM

    folder = testing.tiny_qwen2_5_vl(tmp_path / "qwen")
    vlm = make_backend("vlm", f"qwen2.5-vl:{folder}")
    captioner = make_backend("captioner", str(folder))
    assert isinstance(vlm, CachedVLM) and isinstance(captioner, CachedCaptioner)
    assert vlm.backend is captioner.backend  # loaded once per process
    video = load_suite("synth-tiny")[0].video
    frames = FrameBatch(video, np.array([1.0, 2.0]), video.size._replace(width=56, height=56))
    first = vlm.answer(frames, "What is shown?")
    assert vlm.answer(frames, "What is shown?") == first and vlm.hits == 1


def test_a_stand_in_for_a_missing_video_is_labelled_simulated(tmp_path: Path) -> None:
    import dataclasses

    from video_env.envs.zoom import ZoomEnv

    sample = load_suite("synth-tiny")[0]
    missing = dataclasses.replace(sample, video=str(tmp_path / "missing.mp4"))
    env = ZoomEnv([missing], vlm=RealishVLM(), standin_missing_videos=True)
    _, info = env.reset(seed=0)
    assert info["simulated"] is True  # real backends, but they see a synthetic stand-in
    _, info = ZoomEnv([sample], vlm=RealishVLM()).reset(seed=0)
    assert info["simulated"] is False


def test_missing_extras_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from video_env.errors import BackendNotInstalled

    monkeypatch.setitem(sys.modules, "open_clip", None)  # as if not installed
    with pytest.raises(BackendNotInstalled, match=r"video-env\[models\]"):
        validate_spec("clip", "open_clip:ViT-B-32")
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(BackendNotInstalled, match=r"video-env\[llm\]"):
        validate_spec("vlm", "openai:gpt-4o")
