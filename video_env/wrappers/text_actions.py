"""Text actions: let an LLM policy step an environment with its raw reply."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from video_env.actions.base import ActionSet
from video_env.actions.parsing import ActionParseError
from video_env.actions.types import InvalidAction
from video_env.actions.validation import MAX_WIRE_TEXT_CHARS
from video_env.envs.spaces import text_space


def default_action_set(env: gym.Env[Any, Any]) -> ActionSet[Any]:
    """The text action set of an environment: its ``text_action_set()`` hook.

    Every video-env kind implements the hook
    (:class:`~video_env.envs.text_hooks.TextAgentHooks`); wrappers are looked through.

    Raises:
        TypeError: If the (unwrapped) environment has no ``text_action_set()``.
    """
    unwrapped = env.unwrapped
    hook = getattr(unwrapped, "text_action_set", None)
    if not callable(hook):
        raise TypeError(
            f"{type(unwrapped).__name__} is no video-env environment (it has no "
            "text_action_set()); pass action_set="
        )
    action_set: ActionSet[Any] = hook()
    return action_set


def parse_text_action(
    action_set: ActionSet[Any],
    text: str,
    strict: bool = False,
    max_length: int = MAX_WIRE_TEXT_CHARS,
) -> Any:
    """``text`` parsed by ``action_set``, or an :class:`InvalidAction` carrying the reason.

    As :class:`TextActions` reads a reply; a policy that writes text (a VLM policy) and
    every text adapter (TRL's ``act``, lmms-eval's loop, verifiers) call it to hand a raw
    reply to the env's rules: an unreadable reply, or one over ``max_length`` characters
    (the longest a reply may carry over the wire, by default: the same rule everywhere),
    is an invalid action (penalty, error allowance, ``last_action_error``), never a crash
    of the episode.
    """
    if isinstance(text, str) and len(text) > max_length:
        return InvalidAction(
            f"the reply is {len(text)} characters long; at most {max_length} are read",
            raw=text[:max_length],
        )
    try:
        parsed: Any = action_set.parse(text, strict=strict)
    except ActionParseError as exc:
        parsed = InvalidAction(str(exc), raw=text)
    except (ValueError, OverflowError, RecursionError) as exc:  # a parser bug: still invalid
        parsed = InvalidAction(f"unreadable action ({type(exc).__name__}: {exc})", raw=text)
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
        max_length: Longest reply the action space admits (by default the wire's, as every
            text adapter reads); a longer reply is an invalid action (it is not parsed).
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        action_set: ActionSet[Any] | None = None,
        strict: bool = False,
        max_length: int = MAX_WIRE_TEXT_CHARS,
    ) -> None:
        super().__init__(env)
        self.action_set = action_set or default_action_set(env)
        self.strict = strict
        self._max_length = max_length
        self.action_space = text_space(max_length)

    @property
    def instructions(self) -> str:
        """What the actions are and how to write them."""
        return self.action_set.describe()

    def step(self, action: str) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Parse ``action`` (:func:`parse_text_action`) and step the environment with it."""
        return self.env.step(
            parse_text_action(self.action_set, action, self.strict, self.max_length)
        )

    @property
    def max_length(self) -> int:
        """Longest reply read; a longer one is an invalid action."""
        return self._max_length
