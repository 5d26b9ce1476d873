"""Text actions: let an LLM policy step an environment with its raw reply."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from video_env.actions.base import ActionSet
from video_env.actions.parsing import ActionParseError
from video_env.actions.types import InvalidAction
from video_env.envs.spaces import text_space


def default_action_set(env: gym.Env[Any, Any]) -> ActionSet[Any]:
    """The text action set of an environment (by its class).

    Raises:
        TypeError: If the environment has no known action set.
    """
    from video_env.actions import ClipQueryActionSet, PacingActionSet, ZoomActionSet

    sets: dict[str, type[ActionSet[Any]]] = {
        "PacingEnv": PacingActionSet,
        "ZoomEnv": ZoomActionSet,
        "ClipQueryEnv": ClipQueryActionSet,
    }
    name = type(env.unwrapped).__name__
    if name not in sets:
        raise TypeError(f"no text action set for {name}; pass action_set=")
    return sets[name]()


def parse_text_action(action_set: ActionSet[Any], text: str, strict: bool = False) -> Any:
    """``text`` parsed by ``action_set``, or an :class:`InvalidAction` carrying the reason.

    This is what :class:`TextActions` steps the env with; a policy that writes text (a VLM
    policy) calls it to hand its raw reply to the env's rules: an unreadable reply is an
    invalid action (penalty, error allowance, ``last_action_error``).
    """
    try:
        parsed: Any = action_set.parse(text, strict=strict)
    except ActionParseError as exc:
        parsed = InvalidAction(str(exc), raw=text)
    return parsed


class TextActions(gym.Wrapper[Any, Any, Any, Any]):
    """Accept text actions, parsed by the environment's :class:`ActionSet`.

    Text that cannot be parsed becomes an invalid action: the environment reports the
    parser's message in ``last_action_error`` (meant to be shown to the model), counts it
    against the error allowance and applies the penalty. ``instructions`` documents the
    actions for a prompt.

    Args:
        env: A video-env environment.
        action_set: Parser (default: the env's own).
        strict: Accept only exactly-formatted replies.
        max_length: Longest reply the action space admits.
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        action_set: ActionSet[Any] | None = None,
        strict: bool = False,
        max_length: int = 16384,
    ) -> None:
        super().__init__(env)
        self.action_set = action_set or default_action_set(env)
        self.strict = strict
        self.action_space = text_space(max_length)

    @property
    def instructions(self) -> str:
        """What the actions are and how to write them."""
        return self.action_set.describe()

    def step(self, action: str) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Parse ``action`` and step the environment with it."""
        return self.env.step(parse_text_action(self.action_set, action, self.strict))
