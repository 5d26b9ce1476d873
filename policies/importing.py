"""Policies named by where their class lives: ``my_module:MyPolicy``, ``path/to/file.py:MyPolicy``.

A researcher's own policy runs in ``video-env bench --policies`` without registering it:

- ``my_package.my_module:MyPolicy`` imports the module (it must be importable: installed,
  or under the current directory);
- ``path/to/file.py:MyPolicy`` loads the file by path, in every worker process;
- ``...:MyPolicy?k=v&k2=v2`` passes constructor keyword arguments; values are read as
  JSON where they parse (``0.8``, ``3``, ``true``, ``null``, ``"x"``), else kept as text.

The class must subclass :class:`~policies.base.Policy`; its ``env_kinds`` say where it
runs, and a constructor with an ``llm`` parameter is given the run's LLM (``--llm``) — one
without a default needs it. Loading a spec runs the module's code, as ``import`` does:
name only code you trust.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from policies.base import Policy
from video_env.errors import ConfigError

__all__ = [
    "ImportSpec",
    "defined_in_main",
    "load_class",
    "parse_import_spec",
    "parse_settings",
]


@dataclass(frozen=True)
class ImportSpec:
    """A parsed ``MODULE_OR_FILE:CLASS[?k=v...]`` policy name.

    Attributes:
        source: A dotted module name or a ``.py`` file path.
        attr: The class's name in it.
        kwargs: Constructor keyword arguments.
    """

    source: str
    attr: str
    kwargs: tuple[tuple[str, Any], ...] = ()

    @property
    def is_file(self) -> bool:
        """Whether ``source`` is a file path (it ends in ``.py``)."""
        return self.source.endswith(".py")


def parse_import_spec(name: str) -> ImportSpec | None:
    """The import spec ``name`` is, or None when it has no ``SOURCE:CLASS`` shape.

    ``SOURCE`` is a ``.py`` path or a dotted module name, ``CLASS`` an identifier.

    Raises:
        ConfigError: On a malformed ``?k=v`` part.
    """
    base, _, query = name.strip().partition("?")
    source, colon, attr = base.rpartition(":")
    if not colon or not attr.isidentifier():
        return None
    is_module = all(part.isidentifier() for part in source.split("."))
    if not (source.endswith(".py") or is_module):
        return None
    return ImportSpec(source, attr, parse_settings(query, name))


def parse_settings(query: str, name: str) -> tuple[tuple[str, Any], ...]:
    """The keyword arguments of a name's ``k=v&k2=v2`` part, values read as JSON.

    Raises:
        ConfigError: For an item that is not ``KEY=VALUE``, a key given twice or a value
            that is no finite number where it parses as one.
    """
    pairs: list[tuple[str, Any]] = []
    for item in filter(None, query.split("&")):
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ConfigError(f"policy {name!r}: option {item!r} is not KEY=VALUE")
        if any(key == k for k, _ in pairs):
            raise ConfigError(f"policy {name!r}: option {key!r} is given twice")
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"policy {name!r}: option {key}={text} is not a finite number")
        pairs.append((key, value))
    return tuple(pairs)


def load_class(spec: ImportSpec) -> type[Policy]:
    """Import the spec's module (or file) and return its policy class.

    Raises:
        ConfigError: If the module or file cannot be loaded, has no such attribute, or
            the attribute is not a :class:`~policies.base.Policy` subclass.
    """
    module = _load_file(spec.source) if spec.is_file else _import(spec.source)
    cls = getattr(module, spec.attr, None)
    where = f"{spec.source}:{spec.attr}"
    if cls is None:
        raise ConfigError(f"policy {where!r}: {spec.source} has no attribute {spec.attr!r}")
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise ConfigError(
            f"policy {where!r} is not a subclass of policies.Policy (got {type(cls).__name__})"
        )
    if not cls.env_kinds:
        raise ConfigError(f"policy {where!r} sets no env_kinds (e.g. ('zoom',))")
    return cls


def _import(module_name: str) -> ModuleType:
    if module_name == "__main__":
        raise ConfigError(
            "a policy class in __main__ cannot be named: put it in an importable module or "
            "a .py file and name it MODULE:CLASS or path/to/file.py:CLASS"
        )
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())  # as `python -m` would: a module beside the user's run
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"cannot import policy module {module_name!r}: {exc} (is it installed or under "
            "the current directory?)"
        ) from None


def _load_file(path: str) -> ModuleType:
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise ConfigError(f"policy file {path!r} does not exist")
    # One module per file and content, so an edited file is loaded afresh (and the run's
    # provenance, which digests the file, describes the code that runs).
    content = str(file).encode() + b"\0" + file.read_bytes()
    digest = hashlib.blake2b(content, digest_size=8).hexdigest()
    module_name = f"video_env_user_policy_{file.stem}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    loader_spec = importlib.util.spec_from_file_location(module_name, file)
    if loader_spec is None or loader_spec.loader is None:
        raise ConfigError(f"policy file {path!r} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up here
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise ConfigError(
            f"policy file {path!r} failed to load: {type(exc).__name__}: {exc}"
        ) from exc
    return module


def llm_parameter(cls: type[Policy]) -> tuple[bool, bool]:
    """``(uses_llm, needs_llm)`` from the constructor's ``llm`` parameter.

    The base class's own constructor takes an optional ``llm`` but a subclass that does
    not define one does not use it.
    """
    if cls.__init__ is Policy.__init__:
        return False, False
    try:
        parameters = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False, False
    llm = parameters.get("llm")
    if llm is None:
        return False, False
    return True, llm.default is inspect.Parameter.empty


def defined_in_main(build: Any) -> bool:
    """Whether a registered builder (a class, function or partial) lives in ``__main__``.

    Worker processes cannot import it: the process and Ray executors refuse such a policy.
    """
    target = getattr(build, "func", build)  # functools.partial
    return getattr(target, "__module__", None) == "__main__"
