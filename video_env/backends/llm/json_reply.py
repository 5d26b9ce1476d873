"""JSON out of a language model's reply: code fences, prose, trailing commas, truncation.

Models wrap JSON in prose or Markdown fences, leave trailing commas, use single quotes or
Python literals, and stop mid-object when they run out of tokens. :func:`parse_json_reply`
finds the JSON in such a reply and repairs it with the `json-repair
<https://github.com/mangiucugna/json_repair>`_ library; when nothing usable is there (an
empty reply, a refusal, prose only) it raises :class:`ReplyFormatError`, a
:class:`~video_env.errors.BackendError`, and never another exception. Checking keys,
types and ranges of the result is the caller's job.
"""

from __future__ import annotations

import json
import re
from typing import Any

from video_env._optional import require
from video_env.errors import BackendError

__all__ = ["ReplyFormatError", "parse_json_object", "parse_json_reply"]

_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_-]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_MAX_STARTS = 8  # opening brackets tried per candidate before giving up
_PREVIEW = 80


class ReplyFormatError(BackendError):
    """A model's reply holds no usable JSON.

    Args:
        message: What is wrong.
        reply: The reply text.
    """

    def __init__(self, message: str, reply: str) -> None:
        self.reply = reply
        preview = reply.strip()[:_PREVIEW]
        super().__init__(f"{message}: {preview!r}" if preview else message)


def parse_json_reply(text: str) -> dict[str, Any] | list[Any]:
    """The JSON object or array in a model's reply, repaired if need be.

    Fenced code blocks are tried first, then the whole reply; in each, parsing starts at
    the first ``{`` or ``[`` (then the next ones, if that gives nothing). Concatenated
    objects give the first one. An empty container counts as nothing unless the reply
    literally holds it (``{}``), so a reply cut off at ``{`` is an error, not ``{}``.

    Args:
        text: The reply.

    Returns:
        The parsed dict or list.

    Raises:
        ReplyFormatError: If the reply holds no JSON object or array.
        TypeError: If ``text`` is not a string.
    """
    return _parse(text, "{[")


def parse_json_object(text: str) -> dict[str, Any]:
    """Like :func:`parse_json_reply`, but only a JSON object (a dict) will do.

    Parsing starts at a ``{`` only, so the first object in the reply is returned, even
    one inside an array; prose such as ``see [1]`` is skipped.

    Raises:
        ReplyFormatError: If the reply holds no JSON object.
        TypeError: If ``text`` is not a string.
    """
    value = _parse(text, "{")
    if not isinstance(value, dict):  # pragma: no cover - _parse only yields dicts here
        raise ReplyFormatError("reply holds no JSON object", text)
    return value


def _parse(text: str, openers: str) -> dict[str, Any] | list[Any]:
    if not isinstance(text, str):
        raise TypeError(f"a reply must be a string, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise ReplyFormatError("empty reply", text)
    candidates = [m.group(1) for m in _FENCE.finditer(stripped)]
    candidates.append(stripped)
    for candidate in candidates:
        value = _first_json(candidate, openers)
        if value is not None:
            return value
    kind = "object" if openers == "{" else "object or array"
    raise ReplyFormatError(f"reply holds no JSON {kind}", text)


def _first_json(candidate: str, openers: str) -> dict[str, Any] | list[Any] | None:
    starts = [i for i, ch in enumerate(candidate) if ch in openers][:_MAX_STARTS]
    for start in starts:
        value = _decode(candidate[start:], openers)
        if value is not None:
            return value
    return None


def _decode(body: str, openers: str) -> dict[str, Any] | list[Any] | None:
    strict = True
    try:
        value: Any = json.JSONDecoder().raw_decode(body)[0]
    except (ValueError, RecursionError):
        value, strict = _repair(body), False
    if body[0] == "{" and isinstance(value, list):
        value = next((v for v in value if isinstance(v, dict) and v), None)
    allowed = (dict,) if openers == "{" else (dict, list)
    if not isinstance(value, allowed):
        return None
    if not value and not strict:
        return None  # repaired into nothing, e.g. a reply cut off at "{"
    return value


def _repair(body: str) -> Any:
    json_repair = require("json_repair", "llm", "repairing JSON in model replies")
    try:
        return json_repair.loads(body)
    except Exception:  # best effort: any failure means "no JSON here"
        return None
