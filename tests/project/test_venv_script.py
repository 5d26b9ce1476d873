"""``scripts/_venv.sh``: when the README's two commands (re)install the project."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A venv folder whose ``python`` only records how it was called (no real install)."""
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\necho "$@" >> "$(dirname "$0")/../calls.log"\n')
    python.chmod(0o755)
    return tmp_path / "venv"


def _source(venv: Path, extras: str) -> list[str]:
    """Source the script with ``extras``; the pip installs it ran."""
    log = venv / "calls.log"
    log.unlink(missing_ok=True)
    subprocess.run(
        ["bash", "-c", f'source "{ROOT}/scripts/_venv.sh"'],
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHON": sys.executable,
            "VIDEO_ENV_VENV": str(venv),
            "VIDEO_ENV_EXTRAS": extras,
        },
        check=True,
        capture_output=True,
        cwd=venv,
    )
    return log.read_text().splitlines() if log.exists() else []


def _hash() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:16]


def test_an_install_with_more_extras_serves_a_run_that_asks_fewer(venv: Path) -> None:
    (calls,) = _source(venv, "dev,bench,train")  # a fresh venv: one install
    assert calls.endswith(f"-e {ROOT}[dev,bench,train]")
    assert _source(venv, "dev,bench,train") == []
    assert _source(venv, "bench") == []  # scripts/run-main after scripts/run-tests
    assert _source(venv, "train,dev") == []
    assert _source(venv, "") == []
    (calls,) = _source(venv, "bench,rl")  # an extra no install holds
    assert calls.endswith(f"-e {ROOT}[bench,rl]")
    assert _source(venv, "rl") == []
    stamp = (venv / ".video-env-installed").read_text().splitlines()
    assert stamp == [f"{_hash()} [dev,bench,train]", f"{_hash()} [bench,rl]"]
    assert len(_source(venv, "bench,dev,rl")) == 1  # no one install holds all three


def test_extras_are_whole_names_and_may_carry_spaces(venv: Path) -> None:
    assert len(_source(venv, "bench, models")) == 1
    assert _source(venv, "bench, models") == []
    assert _source(venv, "models,bench") == []
    assert len(_source(venv, "model")) == 1  # not a part of "models"
    assert len(_source(venv, "rl")) == 1
    (venv / "rl").touch()  # an extra is not a glob of the caller's folder
    assert len(_source(venv, "r*")) == 1


def test_a_changed_pyproject_reinstalls(venv: Path) -> None:
    (venv / ".video-env-installed").write_text("0123456789abcdef [dev,bench,train]\n")
    (calls,) = _source(venv, "bench")
    assert calls.endswith(f"-e {ROOT}[bench]")


def test_pips_silent_install_phase_is_announced_and_its_noise_left_out(venv: Path) -> None:
    pip = "Collecting a\nRequirement already satisfied: b\nInstalling collected packages: a\nDone\n"
    (venv / "bin" / "python").write_text(f"#!/bin/sh\nprintf '{pip}'\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHON": sys.executable, "VIDEO_ENV_VENV": str(venv),
           "VIDEO_ENV_EXTRAS": "dev"}  # fmt: skip
    done = subprocess.run(
        ["bash", "-c", f'source "{ROOT}/scripts/_venv.sh"'],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=venv,
    )
    lines = done.stderr.splitlines()
    at = lines.index("Installing collected packages: a")
    assert lines[at + 1].startswith("[video-env] pip is installing them: silent until it is done")
    assert lines[at + 2] == "Done" and "Requirement already satisfied" not in done.stderr
    assert lines[-1] == f"[video-env] installed video-env[dev] into {venv}"
