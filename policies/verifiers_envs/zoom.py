"""verifiers' entry point of the Zoom paradigm.

``vf.load_environment("policies.verifiers_envs.zoom", dataset=..., max_turns=...)``.
"""

from __future__ import annotations

from typing import Any

from policies.verifiers_envs import build_environment


def load_environment(**kwargs: Any) -> Any:
    """A ``vf.MultiTurnEnv`` of ``VideoEnv/Zoom-v1`` (arguments: :func:`build_environment`)."""
    return build_environment("zoom", **kwargs)
