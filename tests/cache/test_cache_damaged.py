"""A damaged cache database: a one-line error `cache clear` fixes; a read-only one is read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("diskcache")

from video_env.cache import DiskCache, cache_key, store
from video_env.cli import main

KEY = cache_key("caption", {"a": 1})


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "_WARNED", set())
    monkeypatch.setattr(store, "_SHARED", {})


def filled(folder: Path) -> Path:
    cache = DiskCache(folder)
    cache.set(KEY, "a caption")
    cache.set(cache_key("clip", {"b": 2}), "x" * 100_000)  # big enough for a value file
    cache.close()
    (folder / "notes.txt").write_text("the user's own file")
    return folder


def overwrite(database: Path) -> None:
    database.write_bytes(b"not a database" * 100)


def truncate(database: Path) -> None:
    os.truncate(database, 1024)


@pytest.mark.parametrize("damage", [overwrite, truncate])
def test_a_damaged_database_is_a_one_line_error_and_clear_removes_it(
    tmp_path: Path, damage: object, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = filled(tmp_path / "cache")
    damage(folder / "cache.db")  # type: ignore[operator]
    capsys.readouterr()
    for args in (["cache", "info"], ["cache", "info", "--json"]):
        assert main([*args, "--dir", str(folder)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is damaged" in err and "Traceback" not in err
        assert f"video-env cache clear --dir {folder}" in err
    assert main(["cache", "clear", "--kind", "clip", "--dir", str(folder)]) == 0
    assert "removed the damaged cache database" in capsys.readouterr().out
    assert not (folder / "cache.db").exists()
    assert not list(folder.rglob("*.val"))
    assert (folder / "notes.txt").read_text() == "the user's own file"  # nothing else goes
    # the cache works again
    DiskCache(folder).set(KEY, "again")
    assert DiskCache(folder).get(KEY) == "again"
    assert main(["cache", "info", "--dir", str(folder)]) == 0
    assert "caption 1" in capsys.readouterr().out


def unprivileged(code: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` where file permissions hold (as root: without its DAC override)."""
    command = [sys.executable, "-c", code]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root without setpriv: a read-only folder cannot be made")
        command = [setpriv, "--bounding-set", "-dac_override,-dac_read_search,-fowner",
                   "--inh-caps", "-all", *command]  # fmt: skip
    env = {**os.environ, "VIDEO_ENV_CACHE_DIR": str(folder), "PYTHONWARNINGS": "always"}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


READ = f"""
from video_env.cache import shared_cache, DiskCache, cache_key
cache = shared_cache()
assert cache is not None, "no cache"
assert cache.get({KEY!r}) == "a caption", "not read"
assert cache.get(cache_key("clip", {{"b": 2}})) == "x" * 100_000, "value file not read"
cache.set({KEY!r}, "changed")
assert cache.get({KEY!r}) == "a caption" and cache.broken is None
print(cache.info().entries, cache.info().read_only)
"""


def test_a_read_only_cache_is_read(tmp_path: Path) -> None:
    folder = filled(tmp_path / "cache")
    before = (folder / "cache.db").read_bytes()
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o500 if path.is_dir() else 0o400)
    try:
        done = unprivileged(READ, folder)
        cli = unprivileged("from video_env.cli import main; main(['cache', 'clear'])", folder)
    finally:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o700 if path.is_dir() else 0o600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "True"]
    assert "read-only: its values are used, new results are not stored" in done.stderr
    assert (folder / "cache.db").read_bytes() == before
    assert "is read-only; make it writable" in cli.stderr and "Traceback" not in cli.stderr
