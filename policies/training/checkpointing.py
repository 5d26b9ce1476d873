"""Activation checkpointing, passed to TRL's configs under the name transformers reads now.

transformers 5 renamed ``gradient_checkpointing`` to ``activation_checkpointing``: the old
name still works but warns (``FutureWarning``, until its removal in v6). TRL's configs set the
old name on by default, so a config built without the new one warns even when our code never
names checkpointing at all. :func:`checkpointing_setting` gives the new name wherever the
installed transformers has it (the old one before its introduction), and
:func:`checkpointing_used` reads back which one the trainer ran with. Our own settings and
flags keep their name (``gradient_checkpointing``, ``--gradient-checkpointing``): it is ours,
and users' commands and recorded runs use it. TRL's GRPO generation itself still calls the
models' old checkpointing methods; :func:`trl_old_names_quiet` silences those warnings
around the calls into TRL that make them.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["CURRENT_NAME", "checkpointing_setting", "checkpointing_used", "trl_old_names_quiet"]

#: transformers' current name of the setting; ``gradient_checkpointing`` is its old alias.
CURRENT_NAME = "activation_checkpointing"


def checkpointing_setting(config_class: type, on: bool) -> dict[str, bool]:
    """The keyword that turns checkpointing ``on`` (or off) in ``config_class(...)``.

    Args:
        config_class: A ``TrainingArguments`` dataclass, e.g. ``trl.SFTConfig``.
        on: Whether to trade compute for memory.
    """
    names = {f.name for f in dataclasses.fields(config_class)}
    return {CURRENT_NAME if CURRENT_NAME in names else "gradient_checkpointing": bool(on)}


def checkpointing_used(args: Any) -> bool:
    """Whether the trainer arguments ``args`` checkpoint activations (either name)."""
    value = getattr(args, CURRENT_NAME, None)
    if value is None:
        value = getattr(args, "gradient_checkpointing", False)
    return bool(value)


#: The warnings of the models' old checkpointing methods, which TRL 1.16's GRPO generation
#: calls on every rollout (``trl.models.utils.disable_gradient_checkpointing``).
_OLD_METHODS = (
    r"`(is_gradient_checkpointing|gradient_checkpointing_enable|gradient_checkpointing_disable)`"
    r" is deprecated"
)


@contextmanager
def trl_old_names_quiet() -> Iterator[None]:
    """Ignore the warnings of TRL's own calls of the models' old checkpointing methods.

    The names are TRL's choice, not ours or our users': nothing a caller can change, so
    the warnings would only bury others.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", _OLD_METHODS, FutureWarning)
        yield
