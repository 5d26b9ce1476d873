"""What the policy registry keeps of one policy: :class:`PolicySpec`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from policies.base import Policy

__all__ = ["PolicySpec"]


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
