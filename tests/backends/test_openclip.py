"""OpenCLIP on a tiny random model: retrieval, batching, the per-frame disk cache."""

from pathlib import Path

import numpy as np
import pytest

from video_env.actions.types import QueryAction, SegmentQuery
from video_env.backends.base import similarities
from video_env.backends.simulated import SimulatedCaptioner
from video_env.cache import DiskCache
from video_env.envs.clip_query import ClipQueryEnv
from video_env.envs.clip_query_rules import candidate_times
from video_env.envs.pacing import PacingEnv
from video_env.envs.perception import Perception
from video_env.errors import BackendError, ConfigError
from video_env.synth import load_suite

pytest.importorskip("open_clip")
from video_env.backends.openclip import OpenCLIP


@pytest.fixture
def disk(tmp_path: Path) -> DiskCache:
    return DiskCache(tmp_path / "cache")


def test_features_are_normalised_batched_and_cached(tiny_clip_dir: str, disk: DiskCache) -> None:
    video = load_suite("synth-tiny")[0].video
    times = [1.0, 2.0, 3.0, 4.0, 5.0, 2.0]
    batched = OpenCLIP(tiny_clip_dir, batch_size=2, cache=disk)
    features = batched.image_features(video, times)
    assert features.shape == (6, batched.embed_dim) and features.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(features, axis=1), 1, rtol=1e-5)
    np.testing.assert_array_equal(features[1], features[5])
    assert batched.computed_frames == 5
    assert batched.usage.clip_calls == 1 and batched.usage.frames == 5
    one_pass = OpenCLIP(tiny_clip_dir, batch_size=64, cache=None)
    np.testing.assert_allclose(one_pass.image_features(video, times), features, atol=1e-5)
    again = OpenCLIP(tiny_clip_dir, cache=disk)  # another run: every frame from disk
    np.testing.assert_array_equal(again.image_features(video, times), features)
    assert again.computed_frames == 0 and again.usage.frames == 5


def test_text_features_are_cached_in_memory(tiny_clip_dir: str) -> None:
    clip = OpenCLIP(tiny_clip_dir, cache=None)
    first = clip.text_features(["a red umbrella", "a clock"])
    assert first.shape == (2, clip.embed_dim)
    cached = clip._texts["a red umbrella"]
    np.testing.assert_array_equal(clip.text_features(["a red umbrella"])[0], first[0])
    assert clip._texts["a red umbrella"] is cached


def _clip_query_env(clip: OpenCLIP) -> ClipQueryEnv:
    perception = Perception(captioner=SimulatedCaptioner(), clip=clip)
    return ClipQueryEnv("synth-tiny", perception=perception)


def test_retrieval_returns_the_argmax_frame_and_second_episode_computes_nothing(
    tiny_clip_dir: str, disk: DiskCache
) -> None:
    clip = OpenCLIP(tiny_clip_dir, cache=disk)
    env = _clip_query_env(clip)
    env.reset(seed=0, options={"index": 0})
    segment = env.segments[2]
    text = "a person reading a sign"
    env.step(QueryAction((SegmentQuery(3, text),)))
    retrieved = env.retrieved[-1]["time"]
    candidates = candidate_times(segment, env.candidate_fps)
    scores = similarities(
        clip.image_features(env.video, candidates.tolist()), clip.text_features([text])[0]
    )
    assert retrieved == pytest.approx(candidates[int(np.argmax(scores))])
    assert segment.start < retrieved < segment.end
    computed = clip.computed_frames
    assert computed == len(candidates)

    fresh = OpenCLIP(tiny_clip_dir, cache=disk)  # a second episode, e.g. in another run
    second = _clip_query_env(fresh)
    second.reset(seed=0, options={"index": 0})
    hits = disk.hits
    second.step(QueryAction((SegmentQuery(3, text),)))
    assert second.retrieved[-1]["time"] == retrieved
    assert fresh.computed_frames == 0
    assert disk.hits - hits == len(candidates)  # a cache hit on every frame


def test_pacing_clip_sensor_runs_on_open_clip(tiny_clip_dir: str) -> None:
    env = PacingEnv(
        "synth-tiny", perception=Perception(clip=OpenCLIP(tiny_clip_dir)), sensors=("clip",)
    )
    obs, info = env.reset(seed=0, options={"index": 0})
    assert env.observation_space.contains(obs)
    assert info["simulated"] is False


def test_missing_weights_error_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="point at local files"):
        OpenCLIP("ViT-B-32", "laion2b_s34b_b79k", cache=None)
    with pytest.raises(BackendError, match="unknown open_clip model 'NoSuchModel'") as info:
        OpenCLIP("NoSuchModel", cache=None)
    assert "ViT-B-32" not in str(info.value)  # not open_clip's list of every built-in name
    with pytest.raises(BackendError, match="not a known tag"):
        OpenCLIP("ViT-B-32", str(tmp_path / "missing.pt"), cache=None)


def test_usage_counts_the_visual_tokens_of_the_frames_asked_for(tiny_clip_dir: str) -> None:
    clip = OpenCLIP(tiny_clip_dir, cache=None)
    video = load_suite("synth-tiny")[0].video
    clip.image_features(video, [1.0, 2.0, 2.0])
    side = clip.input_size.width // clip.patch_size
    assert clip.usage.frames == 2
    assert clip.usage.visual_tokens == 2 * (side * side + 1) > 0


def test_a_folder_refuses_a_pretrained_checkpoint(tiny_clip_dir: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="carries its own weights"):
        OpenCLIP(tiny_clip_dir, str(tmp_path / "other.pt"), cache=None)
