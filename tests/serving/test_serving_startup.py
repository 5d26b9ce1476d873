"""``video-env serve`` starts only what it can serve, and Ctrl-C stops it as SIGTERM does."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("openenv")

from video_env.errors import ConfigError
from video_env.serving.server import check_servable
from video_env.serving.testing import get_json

SERVE = [sys.executable, "-m", "video_env.cli", "serve"]


def test_an_unknown_dataset_exits_with_the_reason_before_binding() -> None:
    with socket.socket() as held:  # the port is taken: binding first would fail otherwise
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = str(held.getsockname()[1])
        done = subprocess.run(
            [*SERVE, "VideoEnv/Pacing-v0", "--dataset", "no-such-suite", "--port", port],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2
    assert "no-such-suite" in done.stderr and "cannot serve VideoEnv/Pacing-v0" in done.stderr
    assert "Address already in use" not in done.stderr and "Traceback" not in done.stderr
    assert " on http://" not in done.stdout


@pytest.mark.parametrize(
    ("env_id", "kwargs", "message"),
    [
        ("VideoEnv/Zoom-v0", {"dataset": "synth-tiny", "colour": "red"}, "colour"),
        ("VideoEnv/Pacing-v0", {"dataset": "synth-tiny", "budget": "lots"}, "budget"),
        ("VideoEnv/Nope-v0", {}, "unknown environment"),
    ],
)
def test_what_no_session_could_reset_is_refused(env_id: str, kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_servable(env_id, kwargs)


def test_a_servable_env_passes_the_check() -> None:
    check_servable("VideoEnv/Pacing-v0", {"dataset": "synth-tiny", "pixel_observations": True})


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_stops_the_server_cleanly_like_sigterm(sig: signal.Signals) -> None:
    process = subprocess.Popen(
        [*SERVE, "VideoEnv/Zoom-v0", "--dataset", "synth-tiny", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert " on http://" in line, line
        base_url = line.split(" on ", 1)[1].split()[0]
        deadline = time.monotonic() + 30
        while True:  # listening
            try:
                assert get_json(base_url + "/health", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        process.send_signal(sig)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert f"{sig.name} received" in err
