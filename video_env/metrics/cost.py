"""Cost accounting: what an episode spent on perception and language models.

A :class:`Cost` is a frozen record of counters. Costs add field by field (``a + b``), so a
list of them sums with ``sum(costs, Cost())`` or simply ``sum(costs)``;
:func:`mean_costs` averages a list per field for benchmark summaries.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from video_env.errors import ConfigError

__all__ = ["Cost", "mean_costs"]

_FLOAT_FIELDS = frozenset({"wall_s", "money_usd"})


@dataclass(frozen=True)
class Cost:
    """Resources spent, e.g. by one episode or one tool call.

    Args:
        frames: Video frames decoded or shown to a model.
        vlm_calls: Vision-language model calls (answers).
        caption_calls: Captioner calls.
        clip_calls: CLIP retrieval queries.
        llm_calls: Language model calls (usually the policy's).
        prompt_tokens: LLM prompt tokens.
        completion_tokens: LLM completion tokens.
        visual_tokens: Visual tokens fed to VLMs.
        wall_s: Wall-clock seconds.
        money_usd: Money spent on paid APIs, in US dollars.

    Raises:
        ConfigError: If a counter is negative or not an integer, or a float field is
            negative or not finite.
    """

    frames: int = 0
    vlm_calls: int = 0
    caption_calls: int = 0
    clip_calls: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    visual_tokens: int = 0
    wall_s: float = 0.0
    money_usd: float = 0.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _FLOAT_FIELDS:
                _check_float(f.name, value)
                object.__setattr__(self, f.name, float(value))
            else:
                _check_count(f.name, value)
                object.__setattr__(self, f.name, int(value))

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(**{k: v + getattr(other, k) for k, v in self.to_dict().items()})

    def __sub__(self, other: Cost) -> Cost:
        """Field-wise difference, e.g. a backend's usage now minus at an episode's start.

        Raises:
            ConfigError: If a field would become negative.
        """
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(**{k: v - getattr(other, k) for k, v in self.to_dict().items()})

    def __radd__(self, other: object) -> Cost:
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self  # the start value of the builtin sum()
        return NotImplemented

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict, for JSON."""
        return asdict(self)

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> Cost:
        """Inverse of :meth:`to_dict`; missing fields are 0.

        Raises:
            ConfigError: On unknown keys or bad values.
        """
        unknown = set(record) - {f.name for f in fields(cls)}
        if unknown:
            raise ConfigError(f"unknown cost fields: {', '.join(sorted(unknown))}")
        return cls(**record)


def _check_count(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"cost {name} must be a non-negative integer, got {value!r}")


def _check_float(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"cost {name} must be a number, got {value!r}")
    if not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"cost {name} must be finite and >= 0, got {value!r}")


def mean_costs(costs: Sequence[Cost]) -> dict[str, float]:
    """Average a list of costs field by field.

    Args:
        costs: The costs, e.g. one per episode.

    Returns:
        ``{field: mean}`` for every field of :class:`Cost`, as floats.

    Raises:
        ConfigError: If ``costs`` is empty or holds something other than costs.
    """
    if not costs:
        raise ConfigError("mean_costs needs at least one cost")
    if not all(isinstance(c, Cost) for c in costs):
        raise ConfigError("mean_costs takes a sequence of Cost records")
    total = sum(costs, Cost())
    return {name: float(value) / len(costs) for name, value in total.to_dict().items()}
