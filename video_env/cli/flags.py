"""Command-line flags from settings dataclasses: each default and help written once.

A command's settings are a dataclass (``DAPOConfig``, ``SFTSettings``, ...) whose fields
carry the defaults and whose Google docstring (its ``Attributes:`` section) says what each
one is. :func:`add_flags` adds one ``--flag`` per field, with the field's type and default
and that text as its help; :func:`from_flags` builds the settings back from the parsed
arguments. A nested dataclass field (``loss: DAPOSettings``) adds its own fields' flags,
named by the inner field (``--eps-low``), so a run's flags stay flat; a ``tuple[X, ...]``
field takes one or more values (``--seeds 0 1 2``). This is the job of
TRL's ``HfArgumentParser``, done here for ``argparse`` subcommands (which it is not) and
without the ``train`` extra.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import inspect
import re
import types
import typing
from collections.abc import Collection, Mapping
from typing import Any, TypeVar

__all__ = ["Flags", "add_flags", "field_docs", "from_flags"]

_T = TypeVar("_T")
_ATTRIBUTE = re.compile(r"^(\s*)(\w+)(?: \([^)]*\))?: (.*)$")


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """The ``Attributes:`` section of ``cls``'s Google docstring, one text a field."""
    docs: dict[str, str] = {}
    lines = inspect.getdoc(cls) or ""
    inside, indent, name = False, 0, ""
    for line in lines.splitlines():
        if line.strip() in ("Attributes:", "Args:"):
            inside, indent, name = True, -1, ""
            continue
        if not inside:
            continue
        if line and not line[0].isspace():  # the next section
            inside = False
            continue
        match = _ATTRIBUTE.match(line)
        if match and (indent < 0 or len(match.group(1)) == indent):
            indent, name = len(match.group(1)), match.group(2)
            docs[name] = match.group(3).strip()
        elif name and line.strip():
            docs[name] += " " + line.strip()
    return docs


def add_flags(
    parser: argparse.ArgumentParser,
    settings: Any,
    *,
    names: Mapping[str, str] | None = None,
    skip: Collection[str] = (),
    choices: Mapping[str, Collection[Any]] | None = None,
) -> None:
    """Add a flag for each field of the dataclass instance ``settings`` (its values: defaults).

    Args:
        parser: Where the flags go.
        settings: The defaults, a dataclass instance (nested dataclass fields recurse).
        names: Flags by field path (``"loss.eps_low"``) where not ``--`` + the field's name
            with dashes (``--eps-low``), e.g. ``{"learning_rate": "--lr"}``.
        skip: Field paths without a flag (set by the command itself).
        choices: The values a field path takes, where it is one of a few.
    """
    choices = choices or {}
    for path, owner, field, value in _leaves(settings, skip):
        flag = _flag(path, field.name, names)
        text = field_docs(owner).get(field.name, "").replace("%", "%%")
        kwargs: dict[str, Any] = {"dest": _dest(flag), "default": value}
        kind, many = _kind(owner, field.name)
        if kind is bool and not many:
            kwargs["action"] = argparse.BooleanOptionalAction if value else "store_true"
        elif path in choices:
            kwargs.update(type=kind, choices=tuple(choices[path]))
        else:
            kwargs.update(type=kind, metavar=field.name.upper() if kind is not str else None)
        if many:
            kwargs["nargs"] = "+"
        shown = " ".join(map(str, value)) if many and value is not None else value
        default = "" if value is None or kind is bool else f" (default: {shown})"
        parser.add_argument(flag, help=f"{text}{default}" or None, **kwargs)


def from_flags(
    settings: _T,
    args: argparse.Namespace,
    *,
    names: Mapping[str, str] | None = None,
    skip: Collection[str] = (),
    **given: Any,
) -> _T:
    """``settings`` with each field its flag's value (see :func:`add_flags`).

    Args:
        settings: The defaults the flags were added from.
        args: The parsed arguments.
        names: The flag names :func:`add_flags` was given.
        skip: The field paths :func:`add_flags` skipped: a skipped nested dataclass keeps
            its default whole; a skipped scalar is still read where another helper added
            its flag (``--seed``).
        **given: Values by field path with dots as ``__`` (``episode__rules=...``): fields
            the command sets itself.
    """
    by_path = {key.replace("__", "."): value for key, value in given.items()}
    rebuilt: _T = _rebuild(settings, args, "", names or {}, by_path, frozenset(skip))
    return rebuilt


def _rebuild(
    settings: Any,
    args: argparse.Namespace,
    prefix: str,
    names: Mapping[str, str],
    given: dict[str, Any],
    skip: frozenset[str],
) -> Any:
    changes: dict[str, Any] = {}
    for field in dataclasses.fields(settings):
        path = prefix + field.name
        value = getattr(settings, field.name)
        nested = dataclasses.is_dataclass(value) and not isinstance(value, type)
        if path in given:
            changes[field.name] = given[path]
        elif nested and path not in skip:  # a skipped one keeps its default whole
            changes[field.name] = _rebuild(value, args, path + ".", names, given, skip)
        elif not nested:  # its flag, or one another helper added (``--seed``)
            dest = _dest(_flag(path, field.name, names))
            if hasattr(args, dest):
                parsed = getattr(args, dest)  # ``nargs`` gives a list; the field holds a tuple
                changes[field.name] = tuple(parsed) if isinstance(parsed, list) else parsed
    return dataclasses.replace(settings, **changes)


def _flag(path: str, name: str, names: Mapping[str, str] | None) -> str:
    """The flag of the field ``name`` at ``path``: ``names``' or ``--`` + the name, dashed."""
    return (names or {}).get(path, "--" + name.replace("_", "-"))


def _dest(flag: str) -> str:
    """The ``argparse`` destination of ``flag``."""
    return flag.lstrip("-").replace("-", "_")


def _leaves(
    settings: Any, skip: Collection[str], prefix: str = ""
) -> list[tuple[str, type, dataclasses.Field[Any], Any]]:
    """``(path, owner class, field, value)`` of every scalar field, nested ones flattened."""
    out = []
    for field in dataclasses.fields(settings):
        path = prefix + field.name
        value = getattr(settings, field.name)
        if path in skip:
            continue
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            out += _leaves(value, skip, path + ".")
        else:
            out.append((path, type(settings), field, value))
    return out


def _kind(cls: type, name: str) -> tuple[type, bool]:
    """A field's scalar type and whether it holds several (``tuple[int, ...] | None`` → int).

    Raises:
        TypeError: For a field no flag can carry (a dict, an object, a fixed-size tuple).
    """
    hint = typing.get_type_hints(cls)[name]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    many = typing.get_origin(hint) is tuple
    item = hint
    if many:
        of, ellipsis = (*typing.get_args(hint), None, None)[:2]
        item = of if ellipsis is Ellipsis else None
    if item in (bool, int, float, str):
        return typing.cast(type, item), many
    raise TypeError(f"{cls.__name__}.{name} ({hint}) has no flag: skip it or set it by hand")


@dataclasses.dataclass(frozen=True)
class Flags(typing.Generic[_T]):
    """A command's flags for its settings: :func:`add_flags` and :func:`from_flags` alike.

    Attributes:
        defaults: The settings whose fields become flags (their values: the defaults).
        names: Flags by field path where not the field's name with dashes.
        skip: Field paths without a flag: they keep their defaults or are given.
        choices: The values a field path takes, where it is one of a few.
    """

    defaults: _T
    names: Mapping[str, str] = dataclasses.field(default_factory=dict)
    skip: Collection[str] = ()
    choices: Mapping[str, Collection[Any]] = dataclasses.field(default_factory=dict)

    def add(self, parser: argparse.ArgumentParser) -> None:
        """Add the flags to ``parser``."""
        add_flags(parser, self.defaults, names=self.names, skip=self.skip, choices=self.choices)

    def build(self, args: argparse.Namespace, **given: Any) -> _T:
        """The settings from the parsed ``args`` (and ``given`` fields, as :func:`from_flags`)."""
        return from_flags(self.defaults, args, names=self.names, skip=self.skip, **given)
