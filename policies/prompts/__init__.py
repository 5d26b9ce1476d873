"""Prompt templates of the LLM-prompted policies (package data, see docs/architecture.md)."""

from __future__ import annotations

import string
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

from video_env.errors import ConfigError
from video_env.types import option_lines


@lru_cache(maxsize=64)
def template(name: str) -> str:
    """The raw text of template ``name`` (e.g. ``"falconeye/reasoning"``).

    Raises:
        ConfigError: If there is no such template.
    """
    path = resources.files(__package__).joinpath(f"{name}.txt")
    if not path.is_file():
        raise ConfigError(f"no prompt template {name!r}")
    return path.read_text(encoding="utf-8")


def fields(name: str) -> set[str]:
    """The placeholders of a template."""
    return {f for _, f, _, _ in string.Formatter().parse(template(name)) if f}


def render(name: str, **values: Any) -> str:
    """Fill template ``name``; every placeholder must be given, and nothing else.

    Raises:
        ConfigError: On missing or unexpected fields.
    """
    expected = fields(name)
    missing, extra = expected - set(values), set(values) - expected
    if missing or extra:
        raise ConfigError(
            f"prompt {name!r}: missing fields {sorted(missing)}, unexpected {sorted(extra)}"
        )
    return template(name).format(**values)


def options_block(options: Sequence[str]) -> str:
    """The question's options for a prompt, or the open-answer instruction."""
    if not options:
        return "Answer in a few words."
    return f"Options:\n{option_lines(options)}\nAnswer with the letter of the right option."
