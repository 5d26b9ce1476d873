"""Names a test that runs long: pytest prints nothing of a test until it ends.

Both test folders' ``conftest.py`` import :func:`pytest_runtest_protocol`, a hook: while
a test runs, a timer thread writes ``still running: <node id> (60 s)`` every
:data:`EVERY_S` seconds (``$VIDEO_ENV_TEST_STILL_RUNNING_S`` to change it, ``0`` to turn it
off) to the terminal, past pytest's capture of the test's own output.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Generator
from typing import Any

import pytest

__all__ = ["EVERY_S", "pytest_runtest_protocol"]

#: Seconds between two notes on a test still running.
EVERY_S = 60.0
_ENV = "VIDEO_ENV_TEST_STILL_RUNNING_S"


def _every() -> float:
    try:
        return float(os.environ.get(_ENV, EVERY_S))
    except ValueError:
        return EVERY_S


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[Any]:
    """Run the test with a timer thread that names it while it runs long."""
    every = _every()
    if every <= 0:
        return (yield)
    # pytest captures file descriptor 1 only inside a test's setup, call and teardown:
    # here it is still the terminal, and a copy of it stays one
    terminal = os.dup(1)
    done = threading.Event()
    thread = threading.Thread(
        target=_note_while_running,
        args=(item.nodeid, every, done, terminal),
        daemon=True,
        name="still-running",
    )
    thread.start()
    try:
        return (yield)
    finally:
        done.set()
        thread.join()
        os.close(terminal)


def _note_while_running(nodeid: str, every: float, done: threading.Event, fd: int) -> None:
    start = time.monotonic()
    while not done.wait(every):
        note = f"\nstill running: {nodeid} ({time.monotonic() - start:.0f} s)\n"
        with contextlib.suppress(OSError):  # a closed terminal: nothing to tell
            os.write(fd, note.encode())
