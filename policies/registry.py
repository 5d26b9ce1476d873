"""Built-in policies by name: ``available()`` and ``make(name, llm=None, **settings)``.

A name may carry an argument after a colon, for policies registered with
:func:`register_parameterised`: ``pacing-ppo:runs/pacing/ppo`` loads a trained policy, and
settings after a ``?``: ``videoscout:pixel?guided=true&max_new_tokens=96`` (values read as
JSON, as :mod:`policies.importing` reads a class's).
A name that is neither may point at a class: ``my_module:MyPolicy``,
``path/to/file.py:MyPolicy?k=v`` (:mod:`policies.importing`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from policies.base import Policy
from policies.clip_query_baselines import (
    DEFAULT_UNIFORM_FRAMES,
    UniformFramesPolicy,
    make_uniform_frames,
)
from policies.falconeye import FalconEyePolicy
from policies.importing import (
    ImportSpec,
    llm_parameter,
    load_class,
    parse_import_spec,
    parse_settings,
)
from policies.learned_pacing import ALGOS, load_pacing_policy
from policies.pacing_baselines import FixedSpeedPolicy
from policies.simple import BlindLLMPolicy, RandomPolicy, UniformPolicy
from policies.tool_dialects import DIALECTS, make_dialect_policy
from policies.videoagent import VideoAgentPolicy
from policies.videoscout import SHIPPED, make_videoscout
from policies.videoscout.tools import make_videoscout_tools
from policies.zoom_baselines import IterativeSamplingPolicy, SequentialPolicy, SocraticPolicy
from video_env.backends.llm.base import LLM
from video_env.envs import ENV_KINDS
from video_env.errors import ConfigError, UnknownNameError


@dataclass(frozen=True)
class PolicySpec:
    """A registered policy.

    Attributes:
        build: ``build(llm, **settings)`` makes the policy.
        needs_llm: It cannot run without an LLM.
        uses_llm: It uses an LLM when given one (else its offline reasoner).
        env_kinds: Environments it supports.
        description: One line for listings.
    """

    build: Callable[..., Policy]
    needs_llm: bool
    uses_llm: bool
    env_kinds: tuple[str, ...]
    description: str


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
    schedule = _schedule_spec(name)
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
    if name in _REGISTRY or _schedule_spec(name) is not None:
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
    base = _ALIASES.get(name, name)
    match = _SCHEDULE.match(base)
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


#: ``pacing-<speed>x`` and ``pacing-<speed>x@<threshold>``: the names the schedules print.
_SCHEDULE = re.compile(r"^pacing-(?P<speed>[124])x(?:@(?P<threshold>\d+(?:\.\d+)?))?$")
#: Old names still accepted (not listed by :func:`available`).
_ALIASES = {"pacing-threshold": "pacing-2x@0.8"}


def _schedule(name: str) -> PolicySpec:
    """The entry of a registered schedule name (``pacing-1x``...)."""
    entry = _schedule_spec(name)
    if entry is None:
        raise ConfigError(f"{name!r} is not a pacing-Nx[@T] name")
    return entry


def _schedule_spec(name: str) -> PolicySpec | None:
    """The fixed schedule a ``pacing-Nx[@T]`` name (or an old alias) reads as, if any."""
    match = _SCHEDULE.match(_ALIASES.get(name, name))
    if match is None:
        return None
    speed = int(match["speed"])
    threshold = float(match["threshold"]) if match["threshold"] else None
    if threshold is not None and not 0 < threshold <= 1:
        raise ConfigError(f"policy {name!r}: the threshold must be in (0, 1]")
    what = (
        f"{speed}x until the sensor's confidence passes {threshold:g} (any pacing-Nx@T runs)"
        if threshold
        else f"read everything at {speed}x"
    )
    return PolicySpec(
        partial(FixedSpeedPolicy, speed, threshold=threshold), False, False, ("pacing",), what
    )


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

    Raises:
        ConfigError: If the policy needs an LLM and none is given.
    """
    if entry.needs_llm and llm is None:
        raise ConfigError(f"policy {name!r} needs an LLM (--llm MODEL)")
    if entry.uses_llm:
        return entry.build(llm, **settings)
    return entry.build(**settings)


_ALL = ENV_KINDS
for _name, _spec in {
    "random": PolicySpec(RandomPolicy, False, False, _ALL, "a random option at once"),
    "blind-llm": PolicySpec(BlindLLMPolicy, True, True, _ALL, "the LLM without the video"),
    "uniform": PolicySpec(
        UniformPolicy, False, False, ("zoom",), "one VLM call on the whole video"
    ),
    "socratic": PolicySpec(
        SocraticPolicy, False, True, ("zoom",), "768-token clip captions -> answer"
    ),
    "socratic-short": PolicySpec(
        lambda llm, **kw: SocraticPolicy(llm, short=True, **kw),
        False,
        True,
        ("zoom",),
        "64-token (light) clip captions -> answer",
    ),
    "sequential": PolicySpec(SequentialPolicy, False, False, ("zoom",), "VLM on every 60 s clip"),
    "sequential-bp": PolicySpec(
        lambda **kw: SequentialPolicy(early_stop=True, **kw),
        False,
        False,
        ("zoom",),
        "VLM on consecutive clips, stop above the threshold",
    ),
    "iterative-sampling": PolicySpec(
        IterativeSamplingPolicy, False, False, ("zoom",), "coarse-to-fine VLM sampling"
    ),
    **{name: _schedule(name) for name in ("pacing-1x", "pacing-4x", "pacing-2x@0.8")},
    "falconeye": PolicySpec(FalconEyePolicy, False, True, ("zoom",), "FALCONEye Pro (45 evals)"),
    "falconeye-flash": PolicySpec(
        lambda llm, **kw: FalconEyePolicy(llm, preset="flash", **kw),
        False,
        True,
        ("zoom",),
        "FALCONEye Flash (10 evals)",
    ),
    "videoagent": PolicySpec(VideoAgentPolicy, False, True, ("clip_query",), "VideoAgent (+OQ)"),
    f"uniform-{DEFAULT_UNIFORM_FRAMES}": PolicySpec(
        lambda llm, **kw: UniformFramesPolicy(DEFAULT_UNIFORM_FRAMES, llm, **kw),
        False,
        True,
        ("clip_query",),
        f"{DEFAULT_UNIFORM_FRAMES} uniformly sampled frames captioned -> answer",
    ),
}.items():
    register(_name, _spec)

for _algo in ALGOS:
    register_parameterised(
        f"pacing-{_algo}",
        PolicySpec(
            partial(load_pacing_policy, _algo),
            False,
            False,
            ("pacing",),
            f"a trained {_algo} pacing policy: pacing-{_algo}:PATH (video-env train pacing; "
            "the zip is unpickled by stable-baselines3: load only files you trust)",
        ),
    )
register_parameterised(
    "uniform-frames",
    PolicySpec(
        make_uniform_frames,
        False,
        True,
        ("clip_query",),
        "N uniformly sampled frames captioned -> answer: uniform-frames:N",
    ),
)
register_parameterised(
    "videoscout",
    PolicySpec(
        make_videoscout,
        False,
        False,
        ("pacing",),
        "VideoScout: a VLM pacing in the Think-Act format: videoscout:qwen2.5-vl:PATH, "
        "videoscout:pixel (shipped SFT), videoscout:pixel-dapo (shipped SFT + DAPO); "
        "?guided=true for legal-action decoding, "
        "?format_guided=true for format-guided decoding of the whole reply",
    ),
)
register_parameterised(
    "videoscout-tools",
    PolicySpec(
        make_videoscout_tools,
        False,
        False,
        ("pacing",),
        "VideoScout in TRL's tool-calling chat (a train trl checkpoint, or train sft on "
        "tool chats): videoscout-tools:PATH",
    ),
)
for _preset in DIALECTS:  # a VLM in each trained tool agent's dialect (policies/tool_dialects/)
    register_parameterised(
        f"{_preset}-vlm",
        PolicySpec(
            partial(make_dialect_policy, _preset),
            False,
            False,
            ("tools",),
            f"a VLM prompted as {_preset} (its chat, frame labels and replies) on the Tools "
            f"preset {_preset}: {_preset}-vlm:transformers:PATH or {_preset}-vlm:openai:MODEL",
        ),
    )


def _register_tool_agents() -> None:
    """The Tools env's prompted agents and each preset's baselines (``policies/tool_agents``)."""
    from policies.tool_agents.entries import FAMILIES, NAMED

    for name, fields in NAMED.items():
        register(name, PolicySpec(*fields))
    for prefix, fields in FAMILIES.items():
        register_parameterised(prefix, PolicySpec(*fields))


_register_tool_agents()

#: The names registered when ``policies`` is imported (what every worker process knows).
_AT_IMPORT = frozenset(_REGISTRY)
