"""Space helpers shared by the environments: real-text Text spaces, windows, scalars.

The Text and Tuple subclasses only shorten ``repr`` (Gymnasium's prints the whole charset);
they pickle, compare, sample and batch as their Gymnasium bases do, and a vector env's
batches of them print as briefly (``Tuple(3 x Text(...))``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from gymnasium.vector.utils import batch_space, iterate

from video_env.envs.vector_memory import ObservationDict
from video_env.errors import InvalidActionError
from video_env.types import MAX_DURATION_S, Interval, option_lines

#: Characters observation and action texts may hold: printable ASCII, newline and tab,
#: Latin-1 letters and common typographic punctuation (Gymnasium's default Text charset
#: is alphanumeric only, which cannot hold real text).
TEXT_CHARSET = frozenset(
    "\n\t"
    + "".join(chr(c) for c in range(32, 127))
    + "".join(chr(c) for c in range(160, 256))
    + "‐‑‒–—―‘’‚“”„•…′″€™→←↑↓≤≥×÷"
)
_CHARSET_STR = "".join(sorted(TEXT_CHARSET))
_REPLACEMENT = "?"


class CompactText(spaces.Text):
    """A :class:`~gymnasium.spaces.Text` whose ``repr`` names its charset in a few words.

    Example: ``Text(0, 256, charset=<text: 217 chars>)``.
    """

    def __init__(self, max_length: int, *, charset: str, charset_name: str) -> None:
        super().__init__(max_length=max_length, min_length=0, charset=charset)
        self.charset_name = charset_name

    def __repr__(self) -> str:
        charset = f"<{self.charset_name}: {len(self.character_set)} chars>"
        return f"Text({self.min_length}, {self.max_length}, charset={charset})"


class CompactTuple(spaces.Tuple[Any]):
    """A :class:`~gymnasium.spaces.Tuple` that prints ``n`` equal spaces once, as ``n x space``."""

    def __repr__(self) -> str:
        first, n = self.spaces[0] if self.spaces else None, len(self.spaces)
        if n > 1 and all(s == first for s in self.spaces):
            return f"Tuple({n} x {first!r})"
        return super().__repr__()


def _compact(space: spaces.Space[Any]) -> spaces.Space[Any]:
    """A plain ``Tuple`` as a :class:`CompactTuple` (same parts and random state); others as is."""
    if type(space) is spaces.Tuple:
        return CompactTuple(space.spaces, seed=space.np_random)
    return space


def _batched_compactly(base: type[spaces.Space[Any]]) -> Callable[..., spaces.Space[Any]]:
    """Gymnasium's ``batch_space`` of ``base``, its ``Tuple`` of copies printed once."""
    batch = batch_space.dispatch(base)

    def batched(space: spaces.Space[Any], n: int = 1) -> spaces.Space[Any]:
        return _compact(batch(space, n))

    return batched


def _batched_fields(space: ObservationDict, n: int = 1) -> spaces.Space[Any]:
    """Gymnasium's batch of an observation dict, each field's ``Tuple`` printed once."""
    batched = cast(spaces.Dict, batch_space.dispatch(spaces.Dict)(space, n))
    for key, field in batched.spaces.items():
        batched.spaces[key] = _compact(field)
    return batched


# A vector env's spaces (``gym.make_vec``) are Gymnasium's batches of these: n copies of a
# text or a sequence in a Tuple, which would print each copy in full.
batch_space.register(CompactText, _batched_compactly(spaces.Text))
batch_space.register(CompactTuple, _batched_compactly(spaces.Tuple))
batch_space.register(ObservationDict, _batched_fields)
# Gymnasium iterates a batched Tuple part by part only when every part's exact type has an
# ``iterate`` of its own: a CompactTuple is iterated as the Tuple it is.
iterate.register(CompactTuple, iterate.dispatch(spaces.Tuple))


def text_space(max_length: int) -> spaces.Text:
    """A Text space of up to ``max_length`` characters from :data:`TEXT_CHARSET`."""
    return CompactText(max_length, charset=_CHARSET_STR, charset_name="text")


def clean_text(text: str, max_length: int) -> str:
    """``text`` restricted to :data:`TEXT_CHARSET` (others become ``?``) and cut to length."""
    if len(text) > max_length:
        text = text[: max_length - 1] + "…"
    if all(c in TEXT_CHARSET for c in text):
        return text
    return "".join(c if c in TEXT_CHARSET else _REPLACEMENT for c in text)


#: Upper bound of times in spaces (a week, in seconds): finite, as Gymnasium's checker wants
#: for action spaces. The longest video a sample may describe.
MAX_SECONDS = MAX_DURATION_S


def window_space() -> spaces.Box:
    """A time window ``[start, end]`` in seconds."""
    return spaces.Box(low=0.0, high=MAX_SECONDS, shape=(2,), dtype=np.float32)


def fraction_window_space() -> spaces.Box:
    """A window as fractions ``[start, end]`` of the video's duration, in ``[0, 1]``.

    Structured (dict) actions use it: Gymnasium and SB3 want normalised Box actions, and
    fractions make a learned policy independent of the video's length.
    """
    return spaces.Box(low=0.0, high=1.0, shape=(2,), dtype=np.float32)


def fraction_to_window(value: object, duration: float) -> Interval:
    """Seconds from a fraction window (see :func:`fraction_window_space`).

    Raises:
        InvalidActionError: If the fractions are not finite, outside ``[0, 1]`` or reversed.
    """
    start, end = (float(v) for v in np.asarray(value, dtype=np.float64).reshape(2))
    if not (np.isfinite(start) and np.isfinite(end)) or not 0 <= start <= end <= 1:
        raise InvalidActionError(
            f"window fractions [{start:g}, {end:g}] must satisfy 0 <= start <= end <= 1"
        )
    return Interval(start * duration, end * duration)


def window_array(window: Interval | None) -> npt.NDArray[np.float32]:
    """A window as ``float32[2]`` (``[0, 0]`` for none)."""
    if window is None:
        return np.zeros(2, dtype=np.float32)
    return np.array([window.start, window.end], dtype=np.float32)


def unit_space(shape: tuple[int, ...] = (1,)) -> spaces.Box:
    """Values in ``[0, 1]``."""
    return spaces.Box(low=0.0, high=1.0, shape=shape, dtype=np.float32)


def scalar(value: float) -> npt.NDArray[np.float32]:
    """``float32[1]``."""
    return np.array([value], dtype=np.float32)


def format_options(options: Sequence[str] | None) -> str:
    """Options as ``A. first`` lines, for an observation (empty for open questions)."""
    if not options:
        return ""
    return option_lines(options)


#: Characters kept of one option in ``option_list``.
OPTION_CHARS = 256


def option_list_space() -> spaces.Sequence:
    """The options as a sequence of texts (``-v1`` observations; empty for open questions)."""
    return spaces.Sequence(text_space(OPTION_CHARS))


def option_list(options: Sequence[str] | None) -> tuple[str, ...]:
    """The option texts without letters, as ``option_list`` holds them.

    Text ``i`` is the option of letter ``OPTION_LETTERS[i]``.
    """
    return tuple(clean_text(text, OPTION_CHARS) for text in options or ())


def versioned_space(space: spaces.Dict, version: int) -> ObservationDict:
    """``space`` with the fields observation ``version`` adds that it does not have.

    Version 1 adds ``option_list`` (the options as a sequence) and ``duration``. The result
    is an :class:`ObservationDict`, which ``AsyncVectorEnv`` can share between processes.
    """
    extra: dict[str, spaces.Space[Any]] = {}
    if version >= 1:
        extra = {
            "option_list": option_list_space(),
            "duration": spaces.Box(0.0, MAX_SECONDS, (1,), np.float32),
        }
    return ObservationDict({**space.spaces, **{k: v for k, v in extra.items() if k not in space}})


#: The longest question or options text, and the longest invalid-action message, that an
#: observation shows (characters).
QUESTION_CHARS, ERROR_CHARS = 2048, 512


def shown_error(message: str) -> str:
    """An invalid action's message as an observation's ``last_action_error`` shows it."""
    return clean_text(message, ERROR_CHARS)


def observation(
    sample: Any,
    fields: dict[str, Any],
    *,
    turn: int,
    error: str,
    version: int,
    duration: float,
) -> dict[str, Any]:
    """An env's observation: the fields every env shows around its kind's own ``fields``.

    The question and options, the kind's fields, the turn and the last invalid action's
    message; observation ``version`` 1 adds ``option_list`` and ``duration`` where the
    kind's fields lack them (see :func:`versioned_space`).

    Args:
        sample: The episode's :class:`~video_env.types.VideoQA`.
        fields: The kind's own fields.
        turn: The turn the observation is for (1 at reset).
        error: The last invalid action's message (empty for none).
        version: The env's observation version.
        duration: The video's length in seconds.
    """
    obs = {
        "question": clean_text(sample.question, QUESTION_CHARS),
        "options": clean_text(format_options(sample.options), QUESTION_CHARS),
        **fields,
        "turn": np.array([turn], dtype=np.int64),
        "last_action_error": shown_error(error),
    }
    if version >= 1:
        obs.setdefault("option_list", option_list(sample.options))
        obs.setdefault("duration", scalar(duration))
    return obs
