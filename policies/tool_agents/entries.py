"""The registry entries of the tool agents and baselines (:mod:`policies.builtin_policies`).

Each entry is the fields of a :class:`~policies.policy_spec.PolicySpec`: ``(build, needs_llm,
uses_llm, env_kinds, description)``; the families take a preset name
(``tools-uniform:longvt``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from policies.tool_agents.baselines import (
    ToolsRandomPolicy,
    ToolsUniformPolicy,
    make_tools_random,
    make_tools_uniform,
)
from policies.tool_agents.dvd import DVDPolicy
from policies.tool_agents.videoseek import VideoSeekPolicy

Fields = tuple[Callable[..., Any], bool, bool, tuple[str, ...], str]
_TOOLS = ("tools",)

#: Policies by name.
NAMED: dict[str, Fields] = {
    "videoseek": (
        VideoSeekPolicy,
        False,
        True,
        _TOOLS,
        "VideoSeek: an LLM thinks, then calls overview/skim/focus/answer (videoseek preset)",
    ),
    "dvd": (
        DVDPolicy,
        False,
        True,
        _TOOLS,
        "Deep Video Discovery: global browse, clip search, frame inspect, finish (dvd preset)",
    ),
    "tools-uniform": (
        ToolsUniformPolicy,
        False,
        False,
        _TOOLS,
        "the preset's looking tool on equal spans at its turn budget, then the answer",
    ),
    "tools-random": (
        ToolsRandomPolicy,
        False,
        False,
        _TOOLS,
        "random valid calls of the preset's tools, then the answer",
    ),
}

#: Families by prefix (``PREFIX:PRESET``).
FAMILIES: dict[str, Fields] = {
    "tools-uniform": (
        make_tools_uniform,
        False,
        False,
        _TOOLS,
        "tools-uniform on a preset the bench then builds: tools-uniform:PRESET",
    ),
    "tools-random": (
        make_tools_random,
        False,
        False,
        _TOOLS,
        "tools-random on a preset the bench then builds: tools-random:PRESET",
    ),
}
