"""Environment variables are read in one module, which documents each one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from video_env import env_vars

ROOT = Path(__file__).resolve().parents[2]
#: Speed benchmarks set up their own runs' environment (they write variables, and read back
#: what they wrote to restore it).
SETTING_UP = ("benchmarks/perf/",)


def environment_reads(path: Path) -> list[int]:
    """Lines of ``path`` that read a variable: ``os.environ.get``, ``os.getenv``,
    ``os.environ[...]`` (a copy of the whole environment, ``{**os.environ}``, is no read)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = ast.unparse(node.func)
            if target in ("os.environ.get", "os.getenv", "environ.get", "getenv"):
                lines.append(node.lineno)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and ast.unparse(node.value) in ("os.environ", "environ")
        ):
            lines.append(node.lineno)
    return lines


def test_the_reader_finds_each_way_of_reading_a_variable(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text(
        "import os\na = os.environ.get('X')\nb = os.getenv('Y')\nc = os.environ['Z']\n"
        "d = {**os.environ}\nos.environ['W'] = '1'\n",
        encoding="utf-8",
    )
    assert environment_reads(module) == [2, 3, 4]


def test_only_env_vars_reads_the_environment() -> None:
    readers = {
        f"{path.relative_to(ROOT)}:{line}"
        for package in ("video_env", "policies", "benchmarks")
        for path in (ROOT / package).rglob("*.py")
        if path != ROOT / "video_env" / "env_vars.py"
        and not str(path.relative_to(ROOT)).startswith(SETTING_UP)
        for line in environment_reads(path)
    }
    assert not readers, sorted(readers)


def test_every_variable_is_documented_in_the_modules_table() -> None:
    table = env_vars.__doc__ or ""
    undocumented = [v.name for v in env_vars.VARIABLES if f"``{v.name}``" not in table]
    assert not undocumented
    assert len({v.name for v in env_vars.VARIABLES}) == len(env_vars.VARIABLES)


def test_an_empty_variable_is_unset_and_fallbacks_are_read_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second = env_vars.LLM_BASE_URLS
    monkeypatch.setenv(first.name, "  ")
    monkeypatch.setenv(second.name, " http://b/v1 ")
    assert env_vars.first_set(env_vars.LLM_BASE_URLS) == (second, "http://b/v1")
    monkeypatch.setenv(env_vars.CACHE.name, "")
    assert env_vars.CACHE.get() is None
