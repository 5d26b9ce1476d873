"""A process-executor bench killed with SIGKILL leaves no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="reads the process table from /proc"
)


def session_members(session: int) -> list[str]:
    """The command lines of the live processes of a session (zombies are gone already)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:  # ended meanwhile
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": state, ppid, pgrp, sid
        if int(fields[3]) == session and fields[0] != "Z":
            members.append(f"{entry.name} {command}")
    return members


def wait_for(condition: object, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_a_killed_process_bench_leaves_no_process(tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = [sys.executable, "-m", "video_env.cli", "bench", "--suite", "synth-quick",
               "--seeds", "0", "1", "2", "--executor", "process", "--workers", "2",
               "--quiet", "--no-plots", "--out", str(out)]  # fmt: skip
    bench = subprocess.Popen(  # its own session: every process it starts is found by it
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        log = out / "episodes.jsonl"
        assert wait_for(lambda: log.exists() and log.stat().st_size > 0, 120), "no episode"
        started = session_members(bench.pid)
        assert bench.poll() is None, "the bench ended before it could be killed"
        # the bench, the fork server, the resource tracker and two workers
        assert len(started) >= 5, started
        bench.send_signal(signal.SIGKILL)
        bench.wait()
        assert wait_for(lambda: not session_members(bench.pid), 10), session_members(bench.pid)
    finally:
        for member in session_members(bench.pid):  # never leave them to the next tests
            os.kill(int(member.split()[0]), signal.SIGKILL)
