"""Policies by name: ``available()`` and ``make(name, llm=None, **settings)``.

A name may carry an argument after a colon, for policies registered with
:func:`register_parameterised`: ``pacing-ppo:runs/pacing/ppo`` loads a trained policy, and
settings after a ``?``: ``videoscout:pixel?guided=true&max_new_tokens=96`` (values read as
JSON, as :mod:`policies.importing` reads a class's).
A name that is neither may point at a class: ``my_module:MyPolicy``,
``path/to/file.py:MyPolicy?k=v`` (:mod:`policies.importing`). The built-in entries are
:mod:`policies.builtin_policies`'s.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from policies.base import Policy
from policies.builtin_policies import (
    ALIASES,
    BUILTIN,
    BUILTIN_FAMILIES,
    SCHEDULE_NAME,
    schedule_spec,
)
from policies.importing import (
    ImportSpec,
    llm_parameter,
    load_class,
    parse_import_spec,
    parse_settings,
)
from policies.policy_spec import PolicySpec
from policies.videoscout import SHIPPED
from video_env.backends.llm.base import LLM
from video_env.errors import ConfigError, UnknownNameError

__all__ = [
    "OFFLINE_SUFFIX",
    "PolicySpec",
    "available",
    "build_entry",
    "canonical_name",
    "import_spec_of",
    "make",
    "parameterised",
    "register",
    "register_class",
    "register_parameterised",
    "registered_at_runtime",
    "spec",
    "spec_from_class",
]

_REGISTRY: dict[str, PolicySpec] = {}
_PARAMETERISED: dict[str, PolicySpec] = {}


def _add(
    table: dict[str, PolicySpec], key: str, spec: PolicySpec, overwrite: bool, what: str
) -> None:
    """``table[key] = spec``, refusing a taken key unless ``overwrite`` (``what``: its kind)."""
    if key in table and not overwrite:
        raise ConfigError(f"a {what} named {key!r} is already registered")
    table[key] = spec


def register(name: str, spec: PolicySpec, *, overwrite: bool = False) -> None:
    """Add a policy to the registry.

    Raises:
        ConfigError: If the name is taken and ``overwrite`` is false.
    """
    _add(_REGISTRY, name, spec, overwrite, "policy")


def register_parameterised(prefix: str, spec: PolicySpec, *, overwrite: bool = False) -> None:
    """Add a policy family named ``PREFIX:ARG``; ``spec.build(arg, ...)`` makes one.

    Raises:
        ConfigError: If the prefix is taken and ``overwrite`` is false.
    """
    _add(_PARAMETERISED, prefix, spec, overwrite, "policy family")


def parameterised() -> list[str]:
    """Registered families, as ``PREFIX:ARG`` patterns (not part of ``available()``)."""
    return sorted(f"{p}:ARG" for p in _PARAMETERISED)


def available(offline: bool | None = None) -> list[str]:
    """Registered names; ``offline=True`` keeps those that run without an LLM."""
    return sorted(n for n, s in _REGISTRY.items() if offline is None or s.needs_llm != offline)


def spec(name: str) -> PolicySpec:
    """The registry entry of ``name``.

    Raises:
        UnknownNameError: Listing the known policies.
    """
    key = canonical_name(name)  # aliases, spellings and the names tables print
    if key in _REGISTRY:
        return _REGISTRY[key]
    prefix, colon, rest = name.partition(":")
    if colon and prefix in _PARAMETERISED:
        family = _PARAMETERISED[prefix]
        arg, _, query = rest.partition("?")
        settings = dict(parse_settings(query, name))
        if "name" in settings:
            raise ConfigError(f"policy {name!r}: its name is the name given; drop name=")
        build = partial(family.build, arg, **settings)
        return replace(family, build=partial(_with_settings, build, query) if settings else build)
    schedule = schedule_spec(name)
    if schedule is not None:
        return schedule
    imported = import_spec_of(name)
    if imported is not None:
        return _imported_spec(name, imported)
    shipped = [f"videoscout:{checkpoint}" for checkpoint in SHIPPED]  # the family's by name
    known = [*_REGISTRY, *parameterised(), *shipped, "MODULE:CLASS", "FILE.py:CLASS"]
    raise UnknownNameError("policy", name, known) from None


def _with_settings(build: Callable[..., Policy], query: str, *args: Any, **kw: Any) -> Policy:
    """``build(...)``, its name ending in the settings it was given by name (``?k=v``).

    Two setting sets of one family are then two table rows, never one.
    """
    policy = build(*args, **kw)
    policy.name = f"{policy.name}?{query}"
    return policy


#: What a table adds to the name of a policy that runs its offline reasoner.
OFFLINE_SUFFIX = "[offline]"


def import_spec_of(name: str) -> ImportSpec | None:
    """The import spec ``name`` is, when it is no registered name, family or schedule."""
    if name in _REGISTRY or schedule_spec(name) is not None:
        return None
    prefix, colon, _ = name.partition(":")
    if colon and prefix in _PARAMETERISED:
        return None
    return parse_import_spec(name)


def canonical_name(name: str) -> str:
    """The name a run files ``name``'s episodes under (aliases and spellings of one policy).

    ``pacing-threshold`` and ``pacing-2x@0.80`` are ``pacing-2x@0.8``; ``falconeye[offline]``
    is ``falconeye``; other names are themselves.
    """
    base = ALIASES.get(name, name)
    match = SCHEDULE_NAME.match(base)
    if match is not None:
        threshold = f"@{float(match['threshold']):g}" if match["threshold"] else ""
        return f"pacing-{match['speed']}x{threshold}"
    if name.endswith(OFFLINE_SUFFIX) and name[: -len(OFFLINE_SUFFIX)] in _REGISTRY:
        return name[: -len(OFFLINE_SUFFIX)]
    return name


def registered_at_runtime(name: str) -> bool:
    """Whether ``name`` was registered after ``policies`` was imported (a user's script).

    Worker processes of the process and Ray executors import ``policies`` afresh, so they
    know only the names registered at import.
    """
    return name in _REGISTRY and name not in _AT_IMPORT


def _imported_spec(name: str, imported: ImportSpec) -> PolicySpec:
    """The entry of a ``MODULE:CLASS`` / ``FILE.py:CLASS`` name (loads the class)."""
    return spec_from_class(load_class(imported), name, **dict(imported.kwargs))


def spec_from_class(cls: type[Policy], name: str, **kwargs: Any) -> PolicySpec:
    """A registry entry that builds ``cls(**kwargs)`` (see :func:`register_class`).

    The entry's envs are the class's ``env_kinds``; a constructor with an ``llm``
    parameter is given the run's LLM (needed when it has no default). Built policies
    that keep the base class's name are named ``name``, the name the run uses.
    """
    uses_llm, needs_llm = llm_parameter(cls)
    # A class's own name names its table rows unless arguments tell two runs of it apart.
    own_name = cls.name if "name" in vars(cls) and not kwargs else None

    def build(*args: Any, **settings: Any) -> Policy:
        llm = {"llm": args[0]} if uses_llm and args else {}
        arguments = {**kwargs, **settings, **llm}
        try:
            inspect.signature(cls).bind(**arguments)
        except TypeError as exc:  # the arguments do not fit the constructor
            raise ConfigError(f"policy {name!r}: {exc}") from None
        policy = cls(**arguments)  # an error inside the user's constructor keeps its traceback
        if own_name is None:
            policy.name = name  # the table's name is the name the run was given
        return policy

    build.__module__ = cls.__module__  # where workers must import it from
    build.policy_class = cls  # type: ignore[attr-defined]  # for the run's provenance
    doc = (inspect.getdoc(cls) or cls.__name__).splitlines()[0]
    return PolicySpec(build, needs_llm, uses_llm, tuple(cls.env_kinds), doc)


def register_class(
    cls: type[Policy], name: str | None = None, *, overwrite: bool = False, **kwargs: Any
) -> str:
    """Register a policy class under ``name`` (default: its ``name`` attribute).

    The benchmark runner then finds it by name (``BenchConfig(policies=(name, ...))``).
    A class defined in a script or notebook (``__main__``) runs under the serial and
    thread executors only; for the process and Ray executors put it in a module and name
    it ``MODULE:CLASS`` instead.

    Returns:
        The registered name.

    Raises:
        ConfigError: If the name is taken and ``overwrite`` is false.
    """
    chosen = name or vars(cls).get("name") or cls.__name__
    register(chosen, spec_from_class(cls, chosen, **kwargs), overwrite=overwrite)
    return chosen


def make(name: str, llm: LLM | None = None, **settings: Any) -> Policy:
    """Build a policy by name.

    Policies that use an LLM run their documented offline reasoner when ``llm`` is None and
    say so in their name (``falconeye[offline]``).

    Raises:
        UnknownNameError: For an unknown name.
        ConfigError: If the policy needs an LLM and none is given.
    """
    return build_entry(spec(name), name, llm, **settings)


def build_entry(entry: PolicySpec, name: str, llm: LLM | None, **settings: Any) -> Policy:
    """Build the policy of ``entry`` (named ``name``), ``llm`` only if it uses one.

    A name ending in ``[offline]`` asks for the offline reasoner: it gets no LLM, even in
    a run that has one (its baseline beside the LLM's own row).

    Raises:
        ConfigError: If the policy needs an LLM and none is given.
    """
    if name.endswith(OFFLINE_SUFFIX):
        llm = None
    if entry.needs_llm and llm is None:
        raise ConfigError(f"policy {name!r} needs an LLM (--llm MODEL)")
    if entry.uses_llm:
        return entry.build(llm, **settings)
    return entry.build(**settings)


for _name, _spec in BUILTIN.items():
    register(_name, _spec)
for _prefix, _spec in BUILTIN_FAMILIES.items():
    register_parameterised(_prefix, _spec)

#: The names registered when ``policies`` is imported (what every worker process knows).
_AT_IMPORT = frozenset(_REGISTRY)
