"""``video-env info`` says of each decoder whether it can read videos, and if not, why."""

import json
import sys
import types
from pathlib import Path

import pytest

from video_env.cli import info as info_module
from video_env.cli import main
from video_env.cli.info import decoder_status


def test_each_decoder_is_reported_usable_or_not_with_a_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    decoders = info["decoders"]
    assert set(decoders) == {"torchcodec", "decord", "pyav"}
    assert all(isinstance(s["usable"], bool) and s["reason"] for s in decoders.values())
    # the report agrees with the decoders a video is opened with
    assert {n for n, s in decoders.items() if s["usable"]} == set(info["decoders_available"])
    assert main(["info"]) == 0
    text = capsys.readouterr().out
    for name, status in decoders.items():
        usable = "usable" if status["usable"] else "not usable"
        assert any(line.split()[:2] == [name, usable.split()[0]] for line in text.splitlines())


def test_a_missing_decoder_says_what_installs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(info_module, "is_available", lambda module: module != "decord")
    status = decoder_status("decord")
    assert status == {"usable": False, "reason": status["reason"]}
    assert status["reason"].startswith("not installed") and "decord==0.6.0" in status["reason"]


def test_a_decoder_whose_import_fails_gives_the_imports_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    package = tmp_path / "decord"
    package.mkdir()
    (package / "__init__.py").write_text(
        "raise OSError('libdecord.so: cannot open shared object file')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "decord", raising=False)
    status = decoder_status("decord")
    assert not status["usable"]
    assert status["reason"] == (
        "installed, but its import fails: OSError: libdecord.so: cannot open shared object file"
    )


def test_torchcodec_without_ffmpegs_libraries_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """TorchCodec imports without FFmpeg and fails only when a video decoder is made."""
    pytest.importorskip("torchcodec.decoders")
    ops = types.ModuleType("torchcodec._core.ops")  # as TorchCodec leaves it without FFmpeg
    ops._FFMPEG_AVAILABLE = False  # type: ignore[attr-defined]

    def load_core_libraries() -> None:  # TorchCodec's message, shortened
        raise RuntimeError(
            "Could not load libtorchcodec. Likely causes:\n  1. FFmpeg is not properly "
            "installed\n[start of libtorchcodec loading traceback]\nFFmpeg version 9:\n"
            "Traceback (most recent call last):\n  File ...\nOSError: libavutil.so.60: "
            "cannot open shared object file: No such file or directory\n[end of traceback]."
        )

    ops.load_core_libraries = load_core_libraries  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torchcodec._core.ops", ops)
    status = decoder_status("torchcodec")
    assert not status["usable"]
    assert "FFmpeg's shared libraries do not load" in status["reason"]
    assert status["reason"].endswith(
        "RuntimeError: Could not load libtorchcodec. Likely causes:; OSError: libavutil.so.60: "
        "cannot open shared object file: No such file or directory"
    )
