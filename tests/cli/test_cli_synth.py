import json

import pytest

from video_env.cli import main
from video_env.data import load_jsonl


def test_synth_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "list"]) == 0
    out = capsys.readouterr().out
    assert "synth-tiny" in out
    assert "12 questions" in out
    assert "simulated" in out


def test_synth_show_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "show", "synth-tiny", "--json"]) == 0
    videos = json.loads(capsys.readouterr().out)
    assert len(videos) == 3
    assert sum(len(v["needles"]) for v in videos) == 6


def test_synth_show_unknown_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "show", "synth-nope"]) == 2
    known = "known: synth-glimpse, synth-glimpse-train, synth-hour, synth-quick, synth-tiny"
    assert known in capsys.readouterr().err


def test_synth_export_round_trip(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    args = ["synth", "export", "synth-tiny", "--out", str(tmp_path), "--limit", "1"]
    assert main([*args, "--fps", "1", "--width", "160", "--height", "90"]) == 0
    err = capsys.readouterr().err
    assert "export 1 videos" in err and "100%" in err  # a progress bar in frames
    samples = load_jsonl(tmp_path / "annotations.jsonl")
    assert len(samples) == 4
    assert all(s.source == "synth-tiny" for s in samples)
    assert (tmp_path / "synth-tiny-000.mp4").stat().st_size > 0


def test_info_names_the_text_embedder(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["text_embedder"] in ("minilm", "lexical")
    assert info["perception_default"].startswith("simulated")


def test_output_piped_into_a_reader_that_leaves_early_is_not_an_error() -> None:
    import subprocess
    import sys

    args = ["synth", "show", "synth-hour", "--json"]  # 230 kB: more than a pipe buffers
    code = f"from video_env.cli import main; raise SystemExit(main({args!r}))"
    reader = "import sys; sys.stdin.readline()"  # reads one line, then closes the pipe
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as writer:  # fmt: skip
        subprocess.run([sys.executable, "-c", reader], stdin=writer.stdout, check=True)
        assert writer.stdout is not None and writer.stderr is not None
        writer.stdout.close()
        err = writer.stderr.read().decode()
    assert writer.returncode == 0, err
    assert "Broken pipe" not in err and "Traceback" not in err
