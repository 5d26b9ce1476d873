import os
import warnings
from collections.abc import Callable
from typing import Any

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


@pytest.fixture
def checker_warnings() -> Callable[..., list[str]]:
    """``run(check, env, **kw)``: run an env checker, return the warnings it raised."""

    def run(check: Callable[..., Any], env: Any, **kwargs: Any) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check(env, **kwargs)
        return [str(w.message) for w in caught]

    return run
