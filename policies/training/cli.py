"""``video-env train distill | tool-chats | sft | rl | trl``: VideoScout's training commands.

The commands live in :mod:`~policies.training.cli_recipe` (distill, tool-chats, sft) and
:mod:`~policies.training.cli_rl` (rl, trl), with what they share in
:mod:`~policies.training.cli_common`; this module adds them and names what other commands
(the laboratory's) build on.
"""

from __future__ import annotations

from typing import Any

from policies.training.cli_common import (
    RULES,
    SCRIPTED_TEACHER,
    layout_from_args,
    pacing_rules,
    samples_from_args,
    split_samples,
)
from policies.training.cli_recipe import (
    add_recipe_commands,
    add_tool_chats_command,
    run_distill,
    run_sft,
    teacher_from_spec,
)
from policies.training.cli_rl import add_rl_commands

__all__ = [
    "RULES",
    "SCRIPTED_TEACHER",
    "add_recipe_commands",
    "add_training_commands",
    "layout_from_args",
    "pacing_rules",
    "run_distill",
    "run_sft",
    "samples_from_args",
    "split_samples",
    "teacher_from_spec",
]


def add_training_commands(kinds: Any) -> None:
    """Add ``distill``, ``tool-chats``, ``sft``, ``rl`` and ``trl`` under ``video-env train``."""
    add_recipe_commands(kinds)
    add_tool_chats_command(kinds)
    add_rl_commands(kinds)
