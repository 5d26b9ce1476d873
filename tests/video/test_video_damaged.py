"""Damaged video files give VideoDecodeError naming the file, with every decoder."""

import os
from pathlib import Path

import numpy as np
import pytest

from video_env.envs import PacingEnv
from video_env.errors import VideoDecodeError
from video_env.types import VideoQA
from video_env.video import available_decoders, open_video
from video_env.video.testing import coded_frames

av = pytest.importorskip("av")
DECODERS = available_decoders()


def write_faststart(path: Path, frames: int = 60) -> None:
    with av.open(str(path), "w", options={"movflags": "faststart"}) as container:
        stream = container.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = 120, 96, "yuv420p"
        for frame in coded_frames(frames):
            image = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")
            container.mux(stream.encode(image))
        container.mux(stream.encode(None))


def write_audio_only(path: Path) -> None:
    with av.open(str(path), "w") as container:
        stream = container.add_stream("aac", rate=16000)
        for i in range(20):
            frame = av.AudioFrame.from_ndarray(
                np.zeros((1, 1024), np.float32), format="fltp", layout="mono"
            )
            frame.sample_rate, frame.pts = 16000, i * 1024
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("damaged")
    good = folder / "good.mp4"
    write_faststart(good)
    data = good.read_bytes()
    files = {"good": good}
    for percent in (10, 50, 90):
        files[f"cut{percent}"] = folder / f"cut{percent}.mp4"
        files[f"cut{percent}"].write_bytes(data[: len(data) * percent // 100])
    middle = len(data) // 2
    files["garbage"] = folder / "garbage.mp4"
    rng = np.random.default_rng(0)
    noise = rng.integers(0, 256, 2000, dtype=np.uint8).tobytes()
    files["garbage"].write_bytes(data[:middle] + noise + data[middle + 2000 :])
    files["audio"] = folder / "audio.mp4"
    write_audio_only(files["audio"])
    return files


def read_everything(path: Path, decoder: str) -> None:
    with open_video(path, decoder=decoder) as video:
        video.frames(np.linspace(0, video.duration, 30))


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("name", ["cut10", "cut50", "cut90", "garbage", "audio"])
def test_damaged_files_raise_video_decode_error(
    damaged: dict[str, Path], name: str, decoder: str
) -> None:
    read_everything(damaged["good"], decoder)
    with pytest.raises(VideoDecodeError) as info:
        read_everything(damaged[name], decoder)
    assert info.value.path == os.fspath(damaged[name])
    assert "/github/workspace" not in str(info.value)  # decord's source locations cut


@pytest.mark.parametrize("decoder", DECODERS)
def test_a_closed_reader_says_so(damaged: dict[str, Path], decoder: str) -> None:
    video = open_video(damaged["good"], decoder=decoder)
    video.close()
    video.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        video.frames([0.0])


@pytest.mark.parametrize("decoder", DECODERS)
def test_env_reset_on_a_damaged_video_raises_video_decode_error(
    damaged: dict[str, Path], decoder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from video_env.envs import Perception

    monkeypatch.setenv("VIDEO_ENV_DECODER", decoder)
    # decord fails on opening both; PyAV opens cut50 (its index is intact) and reads
    # its first chunk fine, failing only later in the video
    for name in ["audio", "cut50"] if decoder == "decord" else ["audio", "cut10"]:
        path = str(damaged[name])
        sample = VideoQA(id="s", video=path, question="q?", options=("a", "b"), answer="A")
        # no simulated backend: the env decodes the file itself, as with real backends
        env = PacingEnv([sample], perception=Perception(None, None, None), sensors=())
        with pytest.raises(VideoDecodeError, match=name):
            env.reset(seed=0)
