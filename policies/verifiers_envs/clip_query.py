"""verifiers' entry point of the ClipQuery paradigm.

``vf.load_environment("policies.verifiers_envs.clip_query", dataset=..., max_turns=...)``.
"""

from __future__ import annotations

from typing import Any

from policies.verifiers_envs import build_environment


def load_environment(**kwargs: Any) -> Any:
    """A ``vf.MultiTurnEnv`` of ``VideoEnv/ClipQuery-v1`` (arguments: :func:`build_environment`)."""
    return build_environment("clip_query", **kwargs)
