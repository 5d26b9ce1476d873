"""No video takes the machine's memory: frame sizes are capped at open, reads follow the output.

A 50 KB H.264 mp4 can declare 16000x16000 frames (384 MB each, decoded): every reader
refuses it from its header, before a frame is decoded, and a Pacing reset over it fails
with that error. A file at the cap opens, and a read of many frames holds about the
output, not every frame at the file's size. Peak memory is measured in a fresh
interpreter (``VmHWM``, reset after the imports), so one test's memory never hides
another's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import video_env.video.indexed as indexed
from video_env.cli import main
from video_env.data import load
from video_env.errors import ConfigError, VideoDecodeError
from video_env.video import available_decoders, open_video, write_video
from video_env.video.probe import DEFAULT_MAX_FRAME_PIXELS, MAX_FRAME_PIXELS_ENV_VAR
from video_env.video.resize import Resize

av = pytest.importorskip("av")
DECODERS = available_decoders()
linux_only = pytest.mark.skipif(
    not os.path.exists("/proc/self/clear_refs"), reason="peak memory is read from Linux's /proc"
)

#: The hostile file's side: 16000x16000 is 256 million pixels, 384 MB per decoded frame.
HUGE = 16000
#: Peak memory above the interpreter's, for refusing the hostile file: a quarter of one of
#: its frames decoded. The readers now take under 20 MB; before the cap, opening it took
#: 602 MB (PyAV) to 2,212 MB (decord), and a Pacing reset 2,486 to 3,991 MB.
REFUSE_BOUND_MB = 96
#: The read test: 64 frames of 1920x1080 at the cap, read at 224 px. Every frame at the
#: file's size holds 398 MB; the readers hold a 32 MiB chunk and the 5 MB output (peaks
#: of 90 to 240 MB with the decoders' own buffers; before, 460 to 880 MB).
READ_SIZE, READ_FRAMES = (1920, 1080), 64
READ_BOUND_MB = 300

#: Encodes one flat 16000x16000 frame straight from YUV (no RGB copy): about 2 s, 1.5 GB
#: while it runs (in its own process), 48 KB on disk.
_GENERATE = """
import sys
from fractions import Fraction
import av
side, path = int(sys.argv[1]), sys.argv[2]
with av.open(path, mode="w") as container:
    stream = container.add_stream("libx264", rate=Fraction(1))
    stream.width, stream.height, stream.pix_fmt = side, side, "yuv420p"
    stream.options = {"preset": "superfast", "tune": "zerolatency", "crf": "51",
                      "threads": "1", "x264-params": "ref=1:bframes=0:rc-lookahead=0:"
                      "subme=0:me=dia:no-deblock=1:no-8x8dct=1"}
    frame = av.VideoFrame(side, side, "yuv420p")
    for plane in frame.planes:
        plane.update(bytes(plane.buffer_size))
    frame.pts = 0
    container.mux(stream.encode(frame))
    container.mux(stream.encode(None))
"""

#: Runs one action in a fresh interpreter; prints its error and its peak memory (MB above
#: the interpreter's, after the imports) as JSON.
_MEASURE = """
import json, sys, time
import numpy as np
from video_env.data import load
from video_env.envs import PacingEnv
from video_env.video import open_video
action, decoder, path = sys.argv[1:4]
if decoder == "torchcodec":
    import torchcodec.decoders
elif decoder == "decord":
    import decord

def kib(key):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(key + ":"))

env = PacingEnv(load("jsonl", path), pixel_observations=True) if action == "reset" else None
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # the peak restarts here: the imports are not counted
base = kib("VmRSS")
result = {}
try:
    if action == "reset":
        env.reset(seed=0)
    else:
        with open_video(path, decoder=decoder) as video:
            if action == "read":
                frames = video.frames(video.frame_times, size=(224, 224))
                result["shape"] = list(frames.shape)
            elif action == "idle":  # one frame, then a policy thinks for a second
                video.frames([0.0], size=(224, 224))
                read = kib("VmRSS")
                time.sleep(1.0)
                result["grew_mb"] = (kib("VmRSS") - read) / 1024
except Exception as exc:
    result.update(error=type(exc).__name__, message=str(exc))
result["peak_mb"] = (kib("VmHWM") - base) / 1024
print(json.dumps(result))
"""


def _measure(action: str, decoder: str, path: Path, **env: str) -> dict[str, Any]:
    """Run ``_MEASURE`` for ``action`` with ``decoder`` as the default decoder."""
    variables = {**os.environ, "VIDEO_ENV_DECODER": decoder, "OMP_NUM_THREADS": "1", **env}
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, action, decoder, str(path)],
        capture_output=True,
        text=True,
        env=variables,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def huge_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1-frame H.264 mp4 whose header (and bitstream) says 16000x16000."""
    if "libx264" not in av.codecs_available:
        pytest.skip("PyAV has no libx264 encoder")
    path = tmp_path_factory.mktemp("huge") / "huge.mp4"
    subprocess.run([sys.executable, "-c", _GENERATE, str(HUGE), str(path)], check=True, timeout=300)
    return path


@pytest.fixture(scope="module")
def hd_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """64 flat frames of 1920x1080 (each a different grey)."""
    path = tmp_path_factory.mktemp("hd") / "hd.mp4"
    width, height = READ_SIZE
    frames = (np.full((height, width, 3), i * 4, np.uint8) for i in range(READ_FRAMES))
    write_video(path, frames, fps=24)
    return path


def _qa(folder: Path, video: str) -> Path:
    record = {"id": "q", "video": video, "question": "What?", "options": ["a", "b"],
              "answer": "A", "gt_intervals": []}  # fmt: skip
    qa = folder / "qa.jsonl"
    qa.write_text(json.dumps(record) + "\n")
    return qa


@linux_only
@pytest.mark.parametrize("decoder", DECODERS)
def test_a_16000_pixel_square_file_is_refused_at_open_within_a_memory_bound(
    huge_video: Path, decoder: str
) -> None:
    result = _measure("open", decoder, huge_video)
    assert result.get("error") == "VideoDecodeError", result
    assert (
        "16000x16000" in result["message"] and f"{DEFAULT_MAX_FRAME_PIXELS:,}" in result["message"]
    )
    assert MAX_FRAME_PIXELS_ENV_VAR in result["message"]
    assert result["peak_mb"] < REFUSE_BOUND_MB, result


@linux_only
@pytest.mark.parametrize("decoder", DECODERS)
def test_a_pacing_reset_with_pixels_over_it_fails_within_the_bound(
    huge_video: Path, decoder: str
) -> None:
    qa = _qa(huge_video.parent, huge_video.name)
    result = _measure("reset", decoder, qa)
    assert result.get("error") == "VideoDecodeError", result
    assert "16000x16000" in result["message"] and "exceed the cap" in result["message"]
    assert result["peak_mb"] < REFUSE_BOUND_MB, result


@linux_only
@pytest.mark.parametrize("decoder", DECODERS)
def test_a_file_at_the_cap_reads_many_frames_within_the_output_bound(
    hd_video: Path, decoder: str
) -> None:
    width, height = READ_SIZE
    result = _measure("read", decoder, hd_video, **{MAX_FRAME_PIXELS_ENV_VAR: f"{width}x{height}"})
    assert "error" not in result, result
    assert result["shape"] == [READ_FRAMES, 126, 224, 3]
    assert result["peak_mb"] < READ_BOUND_MB, result


@linux_only
@pytest.mark.parametrize("decoder", DECODERS)
def test_a_reader_decodes_nothing_while_its_caller_waits(hd_video: Path, decoder: str) -> None:
    # decord went on decoding the whole file in the background after a read: 64 frames
    # of 1080p, 398 MB, within the second a policy thinks
    result = _measure("idle", decoder, hd_video)
    assert "error" not in result, result
    assert result["grew_mb"] < 30, result


@pytest.mark.parametrize("decoder", DECODERS)
def test_the_cap_is_the_boundary_and_its_argument_wins(
    coded_video: str, decoder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pixels = 120 * 96  # the coded video's frames
    monkeypatch.setenv(MAX_FRAME_PIXELS_ENV_VAR, "100")
    with open_video(coded_video, decoder=decoder, max_frame_pixels=pixels) as video:
        assert video.frames([1.0], size=(60, 60)).shape == (1, 48, 60, 3)
    with pytest.raises(VideoDecodeError, match=r"120x96 \(11,520 pixels.*cap of 11,519 pixels"):
        open_video(coded_video, decoder=decoder, max_frame_pixels=pixels - 1)
    monkeypatch.setenv(MAX_FRAME_PIXELS_ENV_VAR, "120x96")
    open_video(coded_video, decoder=decoder).close()
    monkeypatch.setenv(MAX_FRAME_PIXELS_ENV_VAR, "119x96")
    with pytest.raises(VideoDecodeError, match="exceed the cap of 11,424 pixels"):
        open_video(coded_video, decoder=decoder)


@pytest.mark.parametrize("value", ["0", "-5", "8K", "1x2x3", "x96"])
def test_a_bad_cap_variable_is_a_config_error(
    coded_video: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MAX_FRAME_PIXELS_ENV_VAR, value)
    with pytest.raises(ConfigError, match=MAX_FRAME_PIXELS_ENV_VAR):
        open_video(coded_video)


@pytest.mark.parametrize("decoder", DECODERS)
def test_frames_read_a_chunk_at_a_time_equal_frames_read_at_once(
    coded_video: str, decoder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    times = [0.0, 9.9, 3.3, 3.3, 0.5, 7.25, 1.0, 1.0 + 1 / 30]
    sizes: list[object] = [None, (64, 64), Resize.exact(50, 30), Resize.max_pixels(56 * 56)]
    with open_video(coded_video, decoder=decoder, cache_bytes=0) as video:
        whole = [video.frames(times, size=size) for size in sizes]
    monkeypatch.setattr(indexed, "DECODE_CHUNK_BYTES", 1)  # one native frame per call
    with open_video(coded_video, decoder=decoder, cache_bytes=0) as video:
        for size, expected in zip(sizes, whole, strict=True):
            np.testing.assert_array_equal(video.frames(times, size=size), expected)


def test_decord_decodes_nothing_on_open(coded_video: str, monkeypatch: pytest.MonkeyPatch) -> None:
    decord = pytest.importorskip("decord")
    decoded: list[str] = []
    for name in ("__getitem__", "get_batch", "next"):
        original = getattr(decord.VideoReader, name)

        def spy(self: Any, *args: Any, _name: str = name, _original: Any = original) -> Any:
            decoded.append(_name)
            return _original(self, *args)

        monkeypatch.setattr(decord.VideoReader, name, spy)
    with open_video(coded_video, decoder="decord") as video:
        assert video.size == (120, 96) and not decoded
        video.frames([1.0])
    assert decoded == ["get_batch"]


def test_the_template_leaves_out_the_huge_file_and_a_text_file_named_mp4(
    huge_video: Path, coded_video: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "clip.mp4").write_bytes(Path(coded_video).read_bytes())
    (folder / "huge.mp4").write_bytes(huge_video.read_bytes())
    (folder / "notes.mp4").write_text("not a video\n")
    assert main(["data", "template", str(folder)]) == 0
    err = capsys.readouterr().err
    assert "left out 2 files" in err and "'huge.mp4': frames of 16000x16000" in err
    assert "'notes.mp4'" in err and "clip.mp4" not in err
    template = (folder / "qa.jsonl").read_text()
    assert "#   'notes.mp4': " in template and "#   'huge.mp4': frames of 16000x16000" in template
    samples = load("jsonl", folder / "qa.jsonl")
    assert {s.video_path for s in samples} == {str(folder / "clip.mp4")}


def test_a_template_of_files_that_all_fail_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.mp4").write_text("text")
    (tmp_path / "b.mkv").write_bytes(b"\0" * 100)
    assert main(["data", "template", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no video file" in err and "decodes" in err and "'a.mp4'" in err
    assert not (tmp_path / "qa.jsonl").exists()


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_folder_or_fifo_named_mp4_is_refused_at_load_not_per_episode(
    coded_video: str, tmp_path: Path, kind: str
) -> None:
    (tmp_path / "good.mp4").write_bytes(Path(coded_video).read_bytes())
    if kind == "folder":
        (tmp_path / "bad.mp4").mkdir()
    else:
        os.mkfifo(tmp_path / "bad.mp4")
    records = [
        {"id": i, "video": v, "question": "What?", "options": ["a", "b"], "answer": "A"}
        for i, v in (("good", "good.mp4"), ("bad", "bad.mp4"))
    ]
    qa = tmp_path / "qa.jsonl"
    qa.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.warns(UserWarning, match=rf"names a {kind.replace('fifo', 'FIFO')}"):
        samples = load("jsonl", qa)
    assert [s.id for s in samples] == ["good"]
    assert samples.skipped_records[0].id == "bad"
    with pytest.raises(Exception, match=r"bad\.mp4.*not a video file"):
        load("jsonl", qa, strict=True)


def _flat_video(path: Path, container: str, codec: str) -> Path:
    """Ten flat 160x96 frames at 10 fps, in ``container`` with ``codec``."""
    with av.open(str(path), "w", format=container) as out:
        stream = out.add_stream(codec, rate=10)
        stream.width, stream.height, stream.pix_fmt = 160, 96, "yuv420p"
        for i in range(10):
            frame = np.full((96, 160, 3), i * 20, np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize(
    ("name", "container", "codec"),
    [
        ("part2.mp4", "mp4", "mpeg4"),  # its header leaves the size to the decoder (0x0)
        ("program.mpg", "mpeg", "mpeg2video"),  # no stream before the probe: no stream options
    ],
)
def test_files_whose_header_leaves_the_size_to_the_decoder_still_open(
    decoder: str, name: str, container: str, codec: str, tmp_path: Path
) -> None:
    video = _flat_video(tmp_path / name, container, codec)
    reader = open_video(str(video), decoder=decoder)
    assert (reader.size.width, reader.size.height) == (160, 96)
    assert reader.frames([0.0, 0.5]).shape == (2, 96, 160, 3)
    with pytest.raises(VideoDecodeError, match="exceed the cap"):
        open_video(str(video), decoder=decoder, max_frame_pixels=160 * 96 - 1)
