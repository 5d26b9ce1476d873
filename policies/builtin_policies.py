"""The built-in policies' registry entries, and the fixed schedules' names.

:mod:`policies.registry` registers :data:`BUILTIN` by name and :data:`BUILTIN_FAMILIES` by
prefix (``PREFIX:ARG``); a ``pacing-Nx[@T]`` name reads as a fixed schedule
(:func:`schedule_spec`), registered or not.
"""

from __future__ import annotations

import re
from functools import partial

from policies.clip_query_baselines import (
    DEFAULT_UNIFORM_FRAMES,
    UniformFramesPolicy,
    make_uniform_frames,
)
from policies.falconeye import FalconEyePolicy
from policies.learned_pacing import ALGOS, load_pacing_policy
from policies.pacing_baselines import FixedSpeedPolicy
from policies.policy_spec import PolicySpec
from policies.simple import BlindLLMPolicy, RandomPolicy, UniformPolicy
from policies.tool_agents.entries import FAMILIES as TOOL_AGENT_FAMILIES
from policies.tool_agents.entries import NAMED as TOOL_AGENTS
from policies.tool_dialects import DIALECTS, make_dialect_policy
from policies.videoagent import VideoAgentPolicy
from policies.videoscout import make_videoscout
from policies.videoscout.tools import make_videoscout_tools
from policies.zoom_baselines import IterativeSamplingPolicy, SequentialPolicy, SocraticPolicy
from video_env.envs import ENV_KINDS
from video_env.errors import ConfigError

__all__ = ["ALIASES", "BUILTIN", "BUILTIN_FAMILIES", "SCHEDULE_NAME", "schedule_spec"]

#: ``pacing-<speed>x`` and ``pacing-<speed>x@<threshold>``: the names the schedules print.
SCHEDULE_NAME = re.compile(r"^pacing-(?P<speed>[124])x(?:@(?P<threshold>\d+(?:\.\d+)?))?$")
#: Old names still accepted (not listed by :func:`available`).
ALIASES = {"pacing-threshold": "pacing-2x@0.8"}


def _registered_schedule(name: str) -> PolicySpec:
    """The entry of a registered schedule name (``pacing-1x``...)."""
    entry = schedule_spec(name)
    if entry is None:
        raise ConfigError(f"{name!r} is not a pacing-Nx[@T] name")
    return entry


def schedule_spec(name: str) -> PolicySpec | None:
    """The fixed schedule a ``pacing-Nx[@T]`` name (or an old alias) reads as, if any."""
    match = SCHEDULE_NAME.match(ALIASES.get(name, name))
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


_ALL = ENV_KINDS

#: Policies by name.
BUILTIN: dict[str, PolicySpec] = {
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
    **{name: _registered_schedule(name) for name in ("pacing-1x", "pacing-4x", "pacing-2x@0.8")},
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
    **{name: PolicySpec(*fields) for name, fields in TOOL_AGENTS.items()},
}

#: Policy families by prefix (``PREFIX:ARG``).
BUILTIN_FAMILIES: dict[str, PolicySpec] = {
    **{
        f"pacing-{algo}": PolicySpec(
            partial(load_pacing_policy, algo),
            False,
            False,
            ("pacing",),
            f"a trained {algo} pacing policy: pacing-{algo}:PATH (video-env train pacing; "
            "the zip is unpickled by stable-baselines3: load only files you trust)",
        )
        for algo in ALGOS
    },
    "uniform-frames": PolicySpec(
        make_uniform_frames,
        False,
        True,
        ("clip_query",),
        "N uniformly sampled frames captioned -> answer: uniform-frames:N",
    ),
    "videoscout": PolicySpec(
        make_videoscout,
        False,
        False,
        ("pacing",),
        "VideoScout: a VLM pacing in the Think-Act format: videoscout:qwen2.5-vl:PATH, "
        "videoscout:pixel (shipped SFT), videoscout:pixel-dapo (shipped SFT + DAPO); "
        "?guided=true for legal-action decoding, "
        "?format_guided=true for format-guided decoding of the whole reply",
    ),
    "videoscout-tools": PolicySpec(
        make_videoscout_tools,
        False,
        False,
        ("pacing",),
        "VideoScout in TRL's tool-calling chat (a train trl checkpoint, or train sft on "
        "tool chats): videoscout-tools:PATH",
    ),
    # a VLM in each trained tool agent's dialect (policies/tool_dialects/)
    **{
        f"{preset}-vlm": PolicySpec(
            partial(make_dialect_policy, preset),
            False,
            False,
            ("tools",),
            f"a VLM prompted as {preset} (its chat, frame labels and replies) on the Tools "
            f"preset {preset}: {preset}-vlm:transformers:PATH or {preset}-vlm:openai:MODEL",
        )
        for preset in DIALECTS
    },
    **{prefix: PolicySpec(*fields) for prefix, fields in TOOL_AGENT_FAMILIES.items()},
}
