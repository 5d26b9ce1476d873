import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest

from video_env.video import write_video
from video_env.video.testing import coded_frames

CODED_FRAMES = 300
CODED_FPS = 30.0


@pytest.fixture(scope="session")
def coded_video(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A 10 s, 30 fps H.264 video (B-frames, keyframe every 24) whose frames carry their index."""
    path = tmp_path_factory.mktemp("videos") / "coded.mp4"
    write_video(path, coded_frames(CODED_FRAMES), CODED_FPS, gop=24)
    return str(path)


@pytest.fixture(scope="session")
def tiny_qwen_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny random Qwen2.5-VL checkpoint (model + processor), built once per session."""
    pytest.importorskip("transformers")
    from video_env.backends.testing import tiny_qwen2_5_vl

    return str(tiny_qwen2_5_vl(tmp_path_factory.mktemp("models") / "tiny-qwen2.5-vl"))
