import os
import random

import numpy as np
import pytest
from conftest import CODED_FPS, CODED_FRAMES

from video_env import Resize, Size, VideoDecodeError, open_video
from video_env.errors import ConfigError, UnknownNameError
from video_env.video import available_decoders, uniform_times, write_video
from video_env.video.testing import read_code

DECODERS = available_decoders()


@pytest.fixture(params=DECODERS)
def decoder(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def frame_time(i: int) -> float:
    return i / CODED_FPS


def test_both_decoders_are_installed_here() -> None:
    assert DECODERS[-2:] == ["decord", "pyav"]  # torchcodec leads where FFmpeg's libraries are


_HIDE_TORCHCODEC = """
import sys

class _Hide:  # a machine without TorchCodec (or without FFmpeg's libraries)
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "torchcodec":
            raise ModuleNotFoundError(name)
        return None

sys.meta_path.insert(0, _Hide())
"""


def test_without_torchcodec_decord_is_the_default(tmp_path: os.PathLike[str]) -> None:
    import subprocess
    import sys

    hide = os.path.join(tmp_path, "hide")
    os.mkdir(hide)
    with open(os.path.join(hide, "sitecustomize.py"), "w") as handle:
        handle.write(_HIDE_TORCHCODEC)
    env = {**os.environ, "PYTHONPATH": hide}
    env.pop("VIDEO_ENV_DECODER", None)
    probe = (
        "from video_env.video import available_decoders as a, default_decoder as d; print(a(), d())"
    )
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()  # fmt: skip
    assert out == "['decord', 'pyav'] decord"


def test_torchcodec_that_imports_without_ffmpeg_is_not_offered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """TorchCodec >= 0.10 imports without FFmpeg's libraries and fails at the first video."""
    import importlib
    import types

    pytest.importorskip("torchcodec")
    from video_env.video import torchcodec_reader

    try:  # the private flag this check reads must still exist in the installed TorchCodec
        ops = importlib.import_module("torchcodec._core.ops")
    except (ImportError, OSError, RuntimeError):
        ops = None  # too old to import without FFmpeg: the import check covers it
    assert ops is None or hasattr(ops, "_FFMPEG_AVAILABLE")

    real = importlib.import_module
    no_ffmpeg = types.SimpleNamespace(_FFMPEG_AVAILABLE=False)
    monkeypatch.setattr(
        importlib,
        "import_module",
        lambda name, *a: no_ffmpeg if name == "torchcodec._core.ops" else real(name, *a),
    )
    torchcodec_reader.torchcodec_available.cache_clear()
    try:
        assert not torchcodec_reader.torchcodec_available()
        assert available_decoders()[0] == "decord"
    finally:
        monkeypatch.undo()
        torchcodec_reader.torchcodec_available.cache_clear()


def test_metadata(coded_video: str, decoder: str) -> None:
    with open_video(coded_video, decoder=decoder) as video:
        assert video.num_frames == CODED_FRAMES
        assert video.fps == pytest.approx(CODED_FPS)
        assert video.duration == pytest.approx(CODED_FRAMES / CODED_FPS, abs=1e-3)
        assert video.size == Size(120, 96)


def test_sequential_access_is_exact(coded_video: str, decoder: str) -> None:
    times = [frame_time(i) for i in range(CODED_FRAMES)]
    with open_video(coded_video, decoder=decoder, cache_bytes=0) as video:
        codes = read_code(video.frames(times))
    np.testing.assert_array_equal(codes, np.arange(CODED_FRAMES))


def test_uniform_access_is_exact(coded_video: str, decoder: str) -> None:
    with open_video(coded_video, decoder=decoder, cache_bytes=0) as video:
        from video_env import Interval

        times = uniform_times(Interval(0, video.duration), 32)
        codes = read_code(video.frames(times))
    expected = np.round(times * CODED_FPS - 1e-9).astype(int)
    np.testing.assert_array_equal(codes, expected)


def test_random_access_is_exact(coded_video: str, decoder: str) -> None:
    rng = np.random.default_rng(0)
    wanted = rng.integers(0, CODED_FRAMES, size=60)  # unsorted, with repeats
    with open_video(coded_video, decoder=decoder, cache_bytes=0) as video:
        for chunk in np.split(wanted, 6):
            codes = read_code(video.frames([frame_time(i) for i in chunk]))
            np.testing.assert_array_equal(codes, chunk)


def test_nearest_frame_rule_and_ends(coded_video: str, decoder: str) -> None:
    dt = 1 / CODED_FPS
    with open_video(coded_video, decoder=decoder) as video:
        times = [0.0, 0.49 * dt, 0.51 * dt, 5 * dt + 0.4 * dt, video.duration]
        codes = read_code(video.frames(times))
    np.testing.assert_array_equal(codes, [0, 0, 1, 5, CODED_FRAMES - 1])


@pytest.mark.parametrize("bad", [-0.01, 10.5, float("nan"), float("inf")])
def test_out_of_range_timestamps_raise_value_error(coded_video: str, bad: float) -> None:
    with (
        open_video(coded_video) as video,
        pytest.raises(ValueError, match=r"outside video .*valid range 0 to 10\.000"),
    ):
        video.frames([1.0, bad])


def test_empty_request(coded_video: str, decoder: str) -> None:
    with open_video(coded_video, decoder=decoder) as video:
        assert video.frames([], size=(60, 60)).shape == (0, 48, 60, 3)


def test_resize_modes(coded_video: str) -> None:
    with open_video(coded_video) as video:
        assert video.frames([1.0], size=(448, 448)).shape == (1, 358, 448, 3)
        exact = video.frames([1.0], size=Resize.exact(64, 64))
        assert exact.shape == (1, 64, 64, 3)
        budget = video.frames([1.0], size=Resize.max_pixels(224 * 224))
        h, w = budget.shape[1:3]
        assert h % 28 == 0 and w % 28 == 0 and h * w <= 224 * 224
        assert read_code(video.frames([frame_time(30)], size=(240, 240)))[0] == 30


def test_cache_hits_return_equal_frames_and_respect_budget(coded_video: str) -> None:
    frame_bytes = 120 * 96 * 3
    with open_video(coded_video, cache_bytes=10 * frame_bytes) as video:
        times = [frame_time(i) for i in range(0, 40, 4)]
        first = video.frames(times)
        hits_before = video.cache.hits  # type: ignore[attr-defined]
        second = video.frames(times)
        assert video.cache.hits - hits_before == 10  # type: ignore[attr-defined]
        np.testing.assert_array_equal(first, second)
        second[:] = 0  # callers own their arrays: the cache must be unaffected
        np.testing.assert_array_equal(video.frames(times), first)
        video.frames([frame_time(i) for i in range(100, 120)])
        assert video.cache.nbytes <= 10 * frame_bytes  # type: ignore[attr-defined]


def test_missing_file(tmp_path: os.PathLike[str], decoder: str) -> None:
    path = os.path.join(tmp_path, "nope.mp4")
    with pytest.raises(VideoDecodeError, match="file not found") as info:
        open_video(path, decoder=decoder)
    assert info.value.path == path


def test_empty_file(tmp_path: os.PathLike[str], decoder: str) -> None:
    path = os.path.join(tmp_path, "empty.mp4")
    open(path, "wb").close()
    with pytest.raises(VideoDecodeError, match="empty"):
        open_video(path, decoder=decoder)


def test_corrupt_file(tmp_path: os.PathLike[str], decoder: str) -> None:
    path = os.path.join(tmp_path, "corrupt.mp4")
    # seeded (Python's random keeps a seed's stream across versions): about one random
    # 4 KiB in 300 probes as an audio file ("no video stream")
    with open(path, "wb") as f:
        f.write(random.Random(0).randbytes(4096))
    with pytest.raises(VideoDecodeError, match=r"corrupt\.mp4.*(decord|PyAV)"):
        open_video(path, decoder=decoder)


def test_unknown_decoder(coded_video: str) -> None:
    with pytest.raises(UnknownNameError, match="decord, pyav"):
        open_video(coded_video, decoder="ffmpeg-cli")


def test_decoder_env_var(coded_video: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIDEO_ENV_DECODER", "pyav")
    with open_video(coded_video) as video:
        assert type(video).__name__ == "PyAVReader"


def test_writer_rejects_odd_sizes(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(ConfigError, match="even"):
        write_video(os.path.join(tmp_path, "x.mp4"), [np.zeros((5, 5, 3), np.uint8)], 1.0)


def test_truncated_file_fails_cleanly(coded_video: str, tmp_path: os.PathLike[str]) -> None:
    with open(coded_video, "rb") as f:
        data = f.read()
    path = os.path.join(tmp_path, "truncated.mp4")
    with open(path, "wb") as f:
        f.write(data[: len(data) // 3])
    outcomes: dict[str, str] = {}
    for name in DECODERS:
        try:
            video = open_video(path, decoder=name)
        except VideoDecodeError as exc:
            outcomes[name] = f"refused at open: {exc}"
            continue
        # opened: reading must either work (real frames) or raise VideoDecodeError
        with video:
            times = uniform_times_all(video.duration)
            try:
                frames = video.frames(times)
            except VideoDecodeError as exc:
                outcomes[name] = f"refused at read: {exc}"
            else:
                assert frames.dtype == np.uint8 and frames.shape[0] == len(times)
                assert frames.shape[1:] == (video.size.height, video.size.width, 3)
                outcomes[name] = "read"
    refusals = [o for o in outcomes.values() if o.startswith("refused")]
    assert all("truncated.mp4" in o for o in refusals), refusals  # errors name the file
    assert set(outcomes) == set(DECODERS)


def uniform_times_all(duration: float) -> list[float]:
    return [duration * k / 10 for k in range(10)]
