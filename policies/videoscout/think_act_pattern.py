"""VideoScout's Think-Act format as one regular expression (format-guided decoding).

``<think>…</think><memory>…</memory><action>ACTION</action>``: the thought and the notes
are printable ASCII (and line breaks) without ``<``, capped in length (a cap ends a
looping thought instead of letting it run out the token budget), and ACTION is one of the
turn's legal actions. An open question's answer is ``answer("text")``: printable ASCII
without ``"``, ``<``, ``>``, ``[`` or ``]``, not starting with a blank, and not a bare
capital letter (an option letter answers no open question), and no window — the env
takes the window on screen as the evidence, as for an option letter. (Left free, the
pixel students wrote windows into the text and windows that end before they start.)
Printable ASCII only: the pattern's classes stay simple, and the ``regex`` package and
xgrammar (which masks the tokens) read them alike.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from video_env.backends.base import literal_pattern

__all__ = ["DEFAULT_MAX_CHARS", "OPEN_ANSWER", "pattern_id", "think_act_pattern"]

#: The default cap on the thought's and the notes' length, in characters.
DEFAULT_MAX_CHARS = 160

_FREE = r"[\n -;=-~]"  # printable ASCII and line breaks, without "<"
_TEXT = r"[ !#-;=?-Z\\^-~]"  # printable ASCII without " < > [ ]
_FIRST = r"[!#-;=?-@\\^-~]"  # the same, without a blank or a capital letter
_SECOND = r"[!#-;=?-Z\\^-~]"  # after a capital letter: anything but a blank

#: An open question's ``answer`` action: text of up to 40 characters that is not one
#: capital letter, without a window.
OPEN_ANSWER = (
    rf'<action>answer\("(?:{_FIRST}{_TEXT}{{0,39}}|[A-Z]{_SECOND}{_TEXT}{{0,38}})"\)</action>'
)


def think_act_pattern(actions: Sequence[str], *, open_answer: bool, max_chars: int) -> str:
    """The pattern of a whole reply whose action is one of ``actions`` (literal heads).

    Args:
        actions: The legal actions written out, tags included
            (``<action>speed(2x)</action>``).
        open_answer: Whether :data:`OPEN_ANSWER` is legal too.
        max_chars: The most characters of the thought, and of the notes.

    Raises:
        ValueError: Without any action, or with ``max_chars`` below 1.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    choices = [literal_pattern(action) for action in actions]
    choices += [OPEN_ANSWER] if open_answer else []
    if not choices:
        raise ValueError("a Think-Act pattern needs at least one legal action")
    free = rf"{_FREE}{{0,{max_chars}}}"
    return rf"<think>{free}</think><memory>{free}</memory>(?:{'|'.join(choices)})"


def pattern_id(max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """A short fingerprint of the pattern's form (a study keys kept episodes by it).

    It changes whenever the free text, the open answer or the cap changes, so episodes
    played under an earlier form are played again rather than reused.
    """
    probe = think_act_pattern(["<action>x</action>"], open_answer=True, max_chars=max_chars)
    return hashlib.sha256(probe.encode()).hexdigest()[:12]
