"""Built-in policies by name: ``available()`` and ``make(name, llm=None, **settings)``.

A name may carry an argument after a colon, for policies registered with
:func:`register_parameterised`: ``pacing-ppo:runs/pacing/ppo`` loads a trained policy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from policies.base import Policy
from policies.falconeye import FalconEyePolicy
from policies.learned_pacing import ALGOS, load_pacing_policy
from policies.pacing_baselines import FixedSpeedPolicy
from policies.simple import BlindLLMPolicy, RandomPolicy, UniformPolicy
from policies.videoagent import VideoAgentPolicy
from policies.videoscout import make_videoscout
from policies.zoom_baselines import IterativeSamplingPolicy, SequentialPolicy, SocraticPolicy
from video_env.backends.llm.base import LLM
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


def register(name: str, spec: PolicySpec, *, overwrite: bool = False) -> None:
    """Add a policy to the registry.

    Raises:
        ConfigError: If the name is taken and ``overwrite`` is false.
    """
    if name in _REGISTRY and not overwrite:
        raise ConfigError(f"a policy named {name!r} is already registered")
    _REGISTRY[name] = spec


def register_parameterised(prefix: str, spec: PolicySpec, *, overwrite: bool = False) -> None:
    """Add a policy family named ``PREFIX:ARG``; ``spec.build(arg, ...)`` makes one.

    Raises:
        ConfigError: If the prefix is taken and ``overwrite`` is false.
    """
    if prefix in _PARAMETERISED and not overwrite:
        raise ConfigError(f"a policy family named {prefix!r} is already registered")
    _PARAMETERISED[prefix] = spec


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
    if name in _REGISTRY:
        return _REGISTRY[name]
    prefix, colon, arg = name.partition(":")
    if colon and prefix in _PARAMETERISED:
        family = _PARAMETERISED[prefix]
        return replace(family, build=partial(family.build, arg))
    known = [*_REGISTRY, *parameterised()]
    raise UnknownNameError("policy", name, known) from None


def make(name: str, llm: LLM | None = None, **settings: Any) -> Policy:
    """Build a policy by name.

    Policies that use an LLM run their documented offline reasoner when ``llm`` is None and
    say so in their name (``falconeye[offline]``).

    Raises:
        UnknownNameError: For an unknown name.
        ConfigError: If the policy needs an LLM and none is given.
    """
    entry = spec(name)
    if entry.needs_llm and llm is None:
        raise ConfigError(f"policy {name!r} needs an LLM (--llm MODEL)")
    if entry.uses_llm:
        return entry.build(llm, **settings)
    return entry.build(**settings)


_ALL = ("pacing", "zoom", "clip_query")
for _name, _spec in {
    "random": PolicySpec(RandomPolicy, False, False, _ALL, "a random option at once"),
    "blind-llm": PolicySpec(BlindLLMPolicy, True, True, _ALL, "the LLM without the video"),
    "uniform": PolicySpec(
        UniformPolicy, False, False, ("zoom",), "one VLM call on the whole video"
    ),
    "socratic": PolicySpec(SocraticPolicy, False, True, ("zoom",), "clip captions -> answer"),
    "socratic-short": PolicySpec(
        lambda llm, **kw: SocraticPolicy(llm, short=True, **kw),
        False,
        True,
        ("zoom",),
        "the most relevant clip captions -> answer",
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
    "pacing-1x": PolicySpec(
        lambda **kw: FixedSpeedPolicy(1, **kw), False, False, ("pacing",), "read everything at 1x"
    ),
    "pacing-4x": PolicySpec(
        lambda **kw: FixedSpeedPolicy(4, **kw), False, False, ("pacing",), "read everything at 4x"
    ),
    "pacing-threshold": PolicySpec(
        lambda **kw: FixedSpeedPolicy(2, threshold=kw.pop("threshold", 0.8), **kw),
        False,
        False,
        ("pacing",),
        "2x until the sensor's confidence passes 0.8",
    ),
    "falconeye": PolicySpec(FalconEyePolicy, False, True, ("zoom",), "FALCONEye Pro (45 evals)"),
    "falconeye-flash": PolicySpec(
        lambda llm, **kw: FalconEyePolicy(llm, preset="flash", **kw),
        False,
        True,
        ("zoom",),
        "FALCONEye Flash (10 evals)",
    ),
    "videoagent": PolicySpec(VideoAgentPolicy, False, True, ("clip_query",), "VideoAgent (+OQ)"),
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
    "videoscout",
    PolicySpec(
        make_videoscout,
        False,
        False,
        ("pacing",),
        "VideoScout: a VLM pacing in the Think-Act format: videoscout:qwen2.5-vl:PATH",
    ),
)
