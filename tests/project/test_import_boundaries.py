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
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ("video_env", "policies", "benchmarks")
#: What each package may import of the project (itself included).
ALLOWED = {
    "video_env": {"video_env"},
    "policies": {"video_env", "policies"},
    "benchmarks": {"video_env", "policies", "benchmarks"},
}
#: Modules outside ``policies/training`` that import it: the ``train`` command that hosts
#: the recipe, and nothing else.
TRAINING_IMPORTERS = {"policies.cli": {"policies.training.cli", "policies.training.pacing"}}
#: A ``"module:attribute"`` string, as entry points and Gymnasium's ``register`` write them.
ENTRY_POINT = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
#: Calls whose first argument, a string, is a module imported by name.
IMPORTING_CALLS = {"import_module", "__import__"}


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
        named = _named_in_a_string(node)
        if named:
            found.add(named)
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                found.add(".".join([*base, *([node.module] if node.module else [])]))
            elif node.module:
                found.add(node.module)
    return found


def _named_in_a_string(node: ast.AST) -> str | None:
    """The module a string names: an importing call's argument or an entry point."""
    if isinstance(node, ast.Call) and node.args:
        called = node.func
        name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
        first = node.args[0]
        if name in IMPORTING_CALLS and isinstance(first, ast.Constant):
            return str(first.value)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.partition(":")[0] if ENTRY_POINT.fullmatch(node.value) else None
    return None


def docstrings(tree: ast.AST) -> set[int]:
    """The ``id`` of every docstring node in ``tree`` (prose, not the code's strings)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            found.add(id(first.value))
    return found


def laboratory_names(path: Path) -> list[str]:
    """The strings of ``path``'s code (docstrings aside) that name the laboratory."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prose = docstrings(tree)
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in prose
        and re.search(r"\bexperiments[./]", node.value)
    ]


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


def test_the_reader_sees_modules_named_in_strings(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text(
        "import importlib\n"
        "def f():\n    return importlib.import_module('benchmarks.run')\n"
        "def g():\n    return __import__('experiments.simulator')\n"
        "ENTRY = {'Tools': 'policies.simple:RandomPolicy'}\n"
        "TIME = '12:30'\n",
        encoding="utf-8",
    )
    found = imported(module, "video_env.types")
    assert {"benchmarks.run", "experiments.simulator", "policies.simple"} <= found
    assert "12" not in found


def test_a_planted_string_import_of_a_higher_layer_fails_the_boundary(tmp_path: Path) -> None:
    planted = tmp_path / "video_env" / "types.py"
    planted.parent.mkdir()
    planted.write_text(
        (ROOT / "video_env" / "types.py").read_text(encoding="utf-8")
        + "\n\ndef _later():\n    import importlib\n\n"
        "    return importlib.import_module('benchmarks.run')\n",
        encoding="utf-8",
    )
    targets = imported(planted, "video_env.types")
    assert "benchmarks.run" in targets
    assert not {t.split(".")[0] for t in targets} <= ALLOWED["video_env"] | {"importlib"}


def test_a_planted_laboratory_command_in_a_message_is_found(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text(
        '"""Docstrings may say where the laboratory trains (experiments/pixel_models)."""\n'
        "MESSAGE = 'train it with python -m experiments.pixel_models vlm'\n",
        encoding="utf-8",
    )
    assert laboratory_names(module) == ["train it with python -m experiments.pixel_models vlm"]


def test_the_librarys_strings_name_no_laboratory_command_or_folder() -> None:
    hits = {
        f"{path.relative_to(ROOT)}: {text[:80]!r}"
        for path in library_modules()
        for text in laboratory_names(path)
    }
    assert not hits, sorted(hits)


def test_the_packages_entry_points_name_library_modules_only() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups = [project.get("scripts", {}), *project.get("entry-points", {}).values()]
    targets = {value.partition(":")[0] for group in groups for value in group.values()}
    assert targets, "pyproject.toml declares entry points"
    assert {t.split(".")[0] for t in targets} <= set(LIBRARY), sorted(targets)


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


#: Libraries that only training uses: the env package imports none of them.
TRAINING_LIBRARIES = {"trl", "peft", "accelerate", "deepspeed", "verl"}


def training_support(path: Path, name: str | None = None) -> list[str]:
    """What in ``path`` (module ``name``) is training code.

    An import of training code or of a training library, or a loss mask (labels of
    ``-100``, the ignore index of the loss).
    """
    found = [
        t
        for t in imported(path, name)
        if "train" in t.rpartition(".")[2] or t.split(".")[0] in TRAINING_LIBRARIES
    ]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and node.operand.value == 100
        ):
            found.append(f"a loss mask (-100) at line {node.lineno}")
    return found


def test_the_env_package_holds_no_training_support() -> None:
    """Training support (turn encodings with loss masks, trainers) lives in policies."""
    hits = {
        f"{path.relative_to(ROOT)}: {what}"
        for path in (ROOT / "video_env").rglob("*.py")
        for what in training_support(path)
    }
    assert not hits, sorted(hits)


def test_the_training_check_sees_a_loss_mask_and_a_trainer(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text("import trl\nlabels = [-100, -100, 7]\n", encoding="utf-8")
    assert training_support(module, "video_env.probe") == [
        "trl",
        "a loss mask (-100) at line 2",
        "a loss mask (-100) at line 2",
    ]


def test_the_env_package_holds_no_policys_prompt() -> None:
    """VideoScout's prompt layout and checkpoint record are the policy's (``policies``)."""
    for path in (ROOT / "video_env").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "class PromptLayout" not in text and "END_NOTE_PLACES = " not in text, path


def _module_graph() -> dict[str, set[str]]:
    """Library module → the library modules it imports (``from pkg import mod`` is ``pkg.mod``).

    A package's ``__init__`` is left out: re-exporting its own modules is no circle.
    """
    paths = {module_name(path): path for path in library_modules()}
    modules = {name for name, path in paths.items() if path.name != "__init__.py"}
    graph: dict[str, set[str]] = {}
    for name in modules:
        path = paths[name]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets |= {f"{node.module}.{a.name}" for a in node.names} | {node.module}
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
        graph[name] = {t for t in targets & modules if t != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[str]:
    """Pairs of modules that import each other, ``a <-> b``."""
    return sorted(f"{a} <-> {b}" for a, ts in graph.items() for b in ts if a < b and a in graph[b])


def test_no_two_library_modules_import_each_other() -> None:
    assert not circles(_module_graph())


def test_the_circle_check_sees_a_lazy_import_back() -> None:
    assert circles({"a": {"b", "c"}, "b": {"a"}, "c": set()}) == ["a <-> b"]
    graph = _module_graph()
    assert "benchmarks.plots_runs" in graph["benchmarks.plots"]  # imported inside a function
    assert "video_env.env_vars" in graph["video_env.cache.store"]  # from video_env import env_vars
