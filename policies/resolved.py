"""A policy name resolved once: what a run reads instead of the string it was given.

``--policies NAME`` enters as a string. :func:`resolve` turns it into a
:class:`ResolvedPolicy` — its registry entry, the class a ``MODULE:CLASS`` or a run-time
registration builds, whether worker processes can import it, the name its episodes are
filed under — and everything after (the bench's validation, plan, header, provenance and
workers) reads that object, as stable-baselines3 turns a policy name into a class once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from policies.base import Policy
from policies.importing import ImportSpec, defined_in_main
from policies.registry import (
    OFFLINE_SUFFIX,
    PolicySpec,
    build_entry,
    canonical_name,
    import_spec_of,
    registered_at_runtime,
    spec,
)
from video_env.backends.llm.base import LLM

__all__ = ["ResolvedPolicy", "resolve"]


@dataclass(frozen=True)
class ResolvedPolicy:
    """A policy name and everything the name decides.

    Attributes:
        name: The name as given (its table row's name).
        canonical: The name its episodes are filed under (aliases and spellings agree).
        entry: Its registry entry (builder, LLM use, env kinds, description).
        imported: The ``MODULE:CLASS`` / ``FILE.py:CLASS`` it names, if it is one.
        at_runtime: Registered by this process after ``policies`` was imported.
        in_main: Its builder lives in ``__main__`` (a script or notebook).
    """

    name: str
    canonical: str
    entry: PolicySpec
    imported: ImportSpec | None
    at_runtime: bool
    in_main: bool

    @property
    def env_kinds(self) -> tuple[str, ...]:
        """The env kinds it acts in."""
        return self.entry.env_kinds

    @property
    def users_code(self) -> bool:
        """Whether its code is the user's (an import path or a run-time registration)."""
        return self.imported is not None or self.at_runtime

    def policy_class(self) -> Any:
        """The user's class it builds (``None`` for the library's own policies).

        The one its entry was built from (:func:`~policies.registry.spec_from_class` keeps
        it on the builder), so the class is not imported again.
        """
        return (
            getattr(self.entry.build, "policy_class", self.entry.build) if self.users_code else None
        )

    def shown_name(self, llm: str | None) -> str:
        """Its name as the tables show it (``llm``: the run's LLM spec).

        A library policy that uses an LLM runs its offline reasoner when the run has none,
        and its name says so (``[offline]``); a user's class names itself.
        """
        offline = (
            llm is None
            and self.entry.uses_llm
            and not self.users_code
            and not self.name.endswith(OFFLINE_SUFFIX)
        )
        return self.name + (OFFLINE_SUFFIX if offline else "")

    def make(self, llm: LLM | None = None) -> Policy:
        """Build the policy (``llm`` only reaches one that uses an LLM).

        Raises:
            ConfigError: If it needs an LLM and none is given.
        """
        return build_entry(self.entry, self.name, llm)


def resolve(name: str) -> ResolvedPolicy:
    """The policy ``name`` names, resolved once.

    Raises:
        UnknownNameError: Listing the known policies.
        ConfigError: For bad settings in the name.
    """
    entry = spec(name)
    return ResolvedPolicy(
        name=name,
        canonical=canonical_name(name),
        entry=entry,
        imported=import_spec_of(name),
        at_runtime=registered_at_runtime(name),
        in_main=defined_in_main(entry.build),
    )
