"""A test that runs long is named while it runs (``tests/still_running.py``)."""

import os
import re
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from still_running import pytest_runtest_protocol
"""
SLOW = """
import time

def test_quick():
    pass

def test_slow():
    print("the test's own output")
    time.sleep(1.2)
"""


def run_pytest(folder: Path, every: str) -> str:
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "test_slow.py").write_text(SLOW)
    env = {**os.environ, "VIDEO_ENV_TEST_STILL_RUNNING_S": every}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_slow.py"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_test_running_past_the_interval_is_named_while_it_runs(tmp_path: Path) -> None:
    out = run_pytest(tmp_path, "0.4")
    notes = re.findall(r"^still running: (\S+) \((\d+) s\)$", out, re.MULTILINE)
    assert len(notes) >= 2 and {n for n, _ in notes} == {"test_slow.py::test_slow"}, out
    assert [int(s) for _, s in notes] == sorted(int(s) for _, s in notes)
    assert "the test's own output" not in out  # its capture is untouched
    assert "2 passed" in out


def test_the_notes_can_be_turned_off(tmp_path: Path) -> None:
    assert "still running" not in run_pytest(tmp_path, "0")
