"""How a VideoScout episode is played: the one settings object a run passes whole.

Episodes recorded for distillation, DAPO's rollouts, the RL engines' chat environment,
TRL's tool environment and the verifiers environment all play VideoScout in the Pacing env
under the same few settings: the env's rules, the prompt's layout, the turn cap, the
generation budget and temperature, the decoding guides and the env's further arguments.
:class:`EpisodeSettings` holds them; each run's own settings (``DistillConfig``,
``DAPOConfig``, ...) hold one, and every layer below takes it whole.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from policies.videoscout.prompt import DEFAULT_LAYOUT, PromptLayout, VideoScoutPrompt
from video_env.envs.pacing_rules import PacingRules
from video_env.errors import ConfigError

__all__ = ["EpisodeSettings"]


@dataclass(frozen=True)
class EpisodeSettings:
    """The settings of one VideoScout episode (defaults: the paper's prompt and rules).

    Attributes:
        rules: The Pacing env's rules, which the prompt describes.
        layout: Where the prompt says a window ends the video and where the question stands.
        max_turns: Turns after which the episode ends without an answer (reward 0).
        max_new_tokens: Tokens per reply at most.
        temperature: Sampling temperature (0: greedy).
        strict: Parse replies strictly (exactly the Think-Act format and one action).
        guided: Legal-action decoding (the model's chat must take a guide).
        format_guided: Format-guided decoding of the whole reply.
        env_kwargs: Further Pacing-env arguments (e.g. ``perception``).
    """

    rules: PacingRules = field(default_factory=PacingRules)
    layout: PromptLayout = DEFAULT_LAYOUT
    max_turns: int = 32
    max_new_tokens: int = 512
    temperature: float = 0.0
    strict: bool = False
    guided: bool = False
    format_guided: bool = False
    env_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise ConfigError(f"max_turns must be at least 1, got {self.max_turns}")
        if self.max_new_tokens < 1:
            raise ConfigError(f"max_new_tokens must be at least 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ConfigError(f"temperature must be at least 0, got {self.temperature}")

    def replace(self, **changes: Any) -> EpisodeSettings:
        """These settings with ``changes``."""
        return dataclasses.replace(self, **changes)

    def prompt(self) -> VideoScoutPrompt:
        """VideoScout's prompt under these rules and layout."""
        return VideoScoutPrompt(self.rules, self.layout, strict=self.strict)

    def pacing_env_kwargs(self) -> dict[str, Any]:
        """The Pacing env's arguments: the prompt's (frames, no sensors, rules), then ours."""
        return {**self.prompt().env_kwargs, "rules": self.rules, **self.env_kwargs}

    def policy_kwargs(self) -> dict[str, Any]:
        """These settings as :class:`~policies.videoscout.VideoScoutPolicy` arguments."""
        return {
            "rules": self.rules,
            "strict": self.strict,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "guided": self.guided,
            "format_guided": self.format_guided,
            "end_note": self.layout.end_note,
            "question_first": self.layout.question_first,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the rules as :meth:`PacingRules.to_dict`, the layout's fields."""
        return {
            "rules": self.rules.to_dict(),
            "layout": dataclasses.asdict(self.layout),
            **{
                f.name: getattr(self, f.name)
                for f in dataclasses.fields(self)
                if f.name not in ("rules", "layout", "env_kwargs")
            },
            "env_kwargs": sorted(self.env_kwargs),
        }
