"""The import graph keeps the library's layers and the laboratory apart.

``video_env`` ← ``policies`` ← ``benchmarks`` ← ``experiments``: a package imports only
those to its left, and the library (the first three) never imports the laboratory. Inside
``policies``, what users run imports nothing from the training recipe (``policies/training``)
but the ``train`` command that hosts it; the env package holds no policy's prompt. Every
import counts, the ones inside functions too (read from the source, as a linter's import
contracts do).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ("video_env", "policies", "benchmarks")
#: What each package may import of the project (itself included).
ALLOWED = {
    "video_env": {"video_env"},
    "policies": {"video_env", "policies"},
    "benchmarks": {"video_env", "policies", "benchmarks"},
}
#: Modules outside ``policies/training`` that import it: the ``train`` command that hosts
#: the recipe, and nothing else.
TRAINING_IMPORTERS = {"policies.cli": {"policies.training.cli"}}


def module_name(path: Path) -> str:
    """``a/b/c.py`` → ``a.b.c``; a package's ``__init__.py`` → the package."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, name: str | None = None) -> set[str]:
    """Every module ``path`` (module ``name``) imports, absolute, at any depth of its code."""
    name = name or module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                found.add(".".join([*base, *([node.module] if node.module else [])]))
            elif node.module:
                found.add(node.module)
    return found


def library_modules() -> list[Path]:
    return sorted(p for package in LIBRARY for p in (ROOT / package).rglob("*.py"))


def test_the_reader_sees_every_kind_of_import(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text(
        "import video_env.types\nfrom . import registry\nfrom ..envs import base\n"
        "def f():\n    from experiments.simulator import zoom_effect\n",
        encoding="utf-8",
    )
    found = imported(module, "video_env.pixel.probe")
    expected = {"video_env.types", "video_env.pixel", "video_env.envs", "experiments.simulator"}
    assert found == expected


@pytest.mark.parametrize("package", LIBRARY)
def test_a_library_package_imports_only_the_layers_below_it(package: str) -> None:
    crossings = {
        f"{module_name(path)} -> {target}"
        for path in (ROOT / package).rglob("*.py")
        for target in imported(path)
        if target.split(".")[0] in {*LIBRARY, "experiments"}
        and target.split(".")[0] not in ALLOWED[package]
    }
    assert not crossings, f"{package} imports what it may not: {sorted(crossings)}"


def test_the_library_never_imports_the_laboratory() -> None:
    hits = [
        f"{path.relative_to(ROOT)}: {target}"
        for path in library_modules()
        for target in imported(path)
        if target == "experiments" or target.startswith("experiments.")
    ]
    assert not hits


def test_what_users_run_imports_the_training_recipe_only_where_listed() -> None:
    importers: dict[str, set[str]] = {}
    for path in (ROOT / "policies").rglob("*.py"):
        name = module_name(path)
        if name == "policies.training" or name.startswith("policies.training."):
            continue
        targets = {t for t in imported(path) if t.startswith("policies.training")}
        if targets:
            importers[name] = targets
    assert importers == TRAINING_IMPORTERS


def test_envs_backends_and_perceptions_import_no_training_code() -> None:
    for package in ("envs", "backends", "pixel", "video", "synth"):
        for path in (ROOT / "video_env" / package).rglob("*.py"):
            training = {t for t in imported(path) if "train" in t.rpartition(".")[2]}
            assert not training, f"{path.relative_to(ROOT)} imports {training}"


def test_the_env_package_holds_no_policys_prompt() -> None:
    """VideoScout's prompt layout and checkpoint record are the policy's (``policies``)."""
    for path in (ROOT / "video_env").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "class PromptLayout" not in text and "END_NOTE_PLACES = " not in text, path
