"""Field checks of the structured actions: types at construction, sizes before a step.

Two lines of defence, because actions come from outside (learned policies, fuzzers, JSON
files, LLM replies):

- **Construction** (``__post_init__`` of each action dataclass) checks the Python type of
  every field and raises :class:`TypeError` naming the field: ``AnswerAction("A",
  window=1.5)`` is a caller bug caught where it is written. Nothing is copied or printed,
  so a malformed value (an array, a list nested thousands deep) costs nothing.
- **Before a step** (:func:`check_action`), the environment checks the *sizes* (texts at
  most :data:`MAX_TEXT_CHARS` characters, at most :data:`MAX_ITEMS` windows or queries,
  integers within :data:`MAX_INT`) and re-checks the types of an action built around its
  constructor (``object.__new__``, ``object.__setattr__``), raising
  :class:`~video_env.errors.InvalidActionError`. Only then is an action described for the
  trajectory, and every description is bounded (:data:`MAX_DESCRIPTION_CHARS`).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

from video_env.errors import InvalidActionError
from video_env.types import Interval

#: Longest text field (an answer, a query's description, a Pacing memory).
MAX_TEXT_CHARS = 16_384
#: Longest text one reply may carry to an env, over the wire or not (``video-env serve``'s
#: text fields; the reply every text adapter reads, :func:`~video_env.wrappers.text_actions.
#: parse_text_action`): longer is an invalid action, refused over the wire, cut by verifiers.
MAX_WIRE_TEXT_CHARS = 65_536
#: Most windows of one evaluate or queries of one round (every env's own cap is lower).
MAX_ITEMS = 256
#: Largest absolute value of an integer field (chunk, segment, speed factor).
MAX_INT = 10**9
#: Longest description of an action in a trajectory.
MAX_DESCRIPTION_CHARS = 1024


def _type_name(value: object) -> str:
    return type(value).__name__


def as_int(value: object, what: str) -> int:
    """``value`` as a plain ``int`` (numpy integers accepted, ``bool`` refused).

    Raises:
        TypeError: If it is not an integer.
    """
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int, got bool")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{what} must be an int, got {_type_name(value)}") from None


def as_text(value: object, what: str) -> str:
    """``value`` if it is a ``str``.

    Raises:
        TypeError: If it is not.
    """
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {_type_name(value)}")
    return value


def as_optional_text(value: object, what: str) -> str | None:
    """``None`` or a ``str`` (see :func:`as_text`)."""
    return None if value is None else as_text(value, what)


def as_window(value: object, what: str = "the window") -> Interval | None:
    """``None`` or an :class:`~video_env.types.Interval`.

    Raises:
        TypeError: If it is anything else (a number, a pair: build an ``Interval``).
    """
    if value is not None and not isinstance(value, Interval):
        raise TypeError(f"{what} must be an Interval or None, got {_type_name(value)}")
    return value


def as_flag(value: object, what: str) -> bool:
    """A ``bool`` (numpy's included).

    Raises:
        TypeError: If it is not a boolean.
    """
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise TypeError(f"{what} must be a bool, got {_type_name(value)}")


def as_items(value: object, item_type: type[Any], what: str) -> tuple[Any, ...]:
    """A tuple of ``item_type`` from a tuple or a list.

    Raises:
        TypeError: If it is not a tuple or list, or an item has another type.
    """
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{what} must be a tuple of {item_type.__name__}, got {_type_name(value)}")
    for item in value:
        if not isinstance(item, item_type):
            raise TypeError(
                f"{what} must be a tuple of {item_type.__name__}, holds a {_type_name(item)}"
            )
    return tuple(value)


# -- before a step -------------------------------------------------------------------------


def check_text_size(value: object, what: str) -> None:
    """Raise :class:`InvalidActionError` if ``value`` is a text over :data:`MAX_TEXT_CHARS`."""
    if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
        raise InvalidActionError(
            f"{what} is {len(value)} characters long; at most {MAX_TEXT_CHARS} are allowed"
        )


def check_int_size(value: int, what: str) -> None:
    """Raise :class:`InvalidActionError` if ``|value|`` exceeds :data:`MAX_INT`."""
    if not -MAX_INT <= value <= MAX_INT:
        raise InvalidActionError(f"{what} is out of range (|value| must be <= {MAX_INT})")


def check_count(value: object, what: str) -> None:
    """Raise :class:`InvalidActionError` if a tuple or list holds over :data:`MAX_ITEMS`."""
    if isinstance(value, (tuple, list)) and len(value) > MAX_ITEMS:
        raise InvalidActionError(f"{len(value)} {what} in one action; at most {MAX_ITEMS}")


#: Deepest nesting and most values of a tool call's JSON-like arguments.
MAX_JSON_DEPTH, MAX_JSON_VALUES = 8, 1024


def check_json_size(value: object, what: str) -> None:
    """Raise :class:`InvalidActionError` for JSON-like values too deep, many or long.

    One bounded walk: a value nested deeper than :data:`MAX_JSON_DEPTH`, holding more than
    :data:`MAX_JSON_VALUES` values or a text over :data:`MAX_TEXT_CHARS` is refused before
    anything reads it; a value that is not JSON-like (an object) too.
    """
    stack: list[tuple[object, int]] = [(value, 0)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > MAX_JSON_VALUES or depth > MAX_JSON_DEPTH:
            raise InvalidActionError(
                f"{what} are too large (at most {MAX_JSON_VALUES} values, {MAX_JSON_DEPTH} deep)"
            )
        if isinstance(item, Mapping):
            if not all(isinstance(k, str) for k in item):
                raise InvalidActionError(f"{what}: argument names must be texts")
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, str):
            check_text_size(item, what)
        elif item is not None and not isinstance(item, (bool, int, float)):
            raise InvalidActionError(f"{what} must be JSON values, got a {_type_name(item)}")


def checked(build: Any, *args: Any) -> Any:
    """``build(*args)`` with a :class:`TypeError` turned into an invalid action."""
    try:
        return build(*args)
    except TypeError as exc:
        raise InvalidActionError(f"malformed action: {exc}") from None


def dict_text(action: Mapping[str, Any], key: str, default: str | None = None) -> str:
    """A text field of an ``action_space`` dict, checked for type and size.

    Raises:
        KeyError: If it is missing and has no default.
        InvalidActionError: If it is not a ``str`` or is too long.
    """
    value = action[key] if default is None else action.get(key, default)
    text = checked(as_text, value, f"{key!r}")
    check_text_size(text, f"{key!r}")
    return str(text)
