"""The cache's on-disk format: data only, never code, so a planted value never runs.

A value is stored as bytes: ``J`` + UTF-8 JSON for texts, numbers, lists, dicts,
:class:`~video_env.backends.base.Answer` and :class:`~video_env.metrics.judges.Grade`
(a ``{"type": ..., "value": ...}`` envelope), or ``N`` + a NumPy ``.npy`` file for arrays
(numeric dtypes only, read with ``allow_pickle=False``). Anything else read back — a
pickle planted by someone with write access to the folder, a truncated entry, JSON nested
too deep — is :class:`CacheFormatError`, which the cache treats as a miss.
"""

from __future__ import annotations

import io
import json
import math
from typing import Any

import numpy as np

from video_env.errors import ConfigError

_JSON, _NUMPY = b"J", b"N"


class CacheFormatError(ValueError):
    """Bytes that are not a value this library wrote."""


def encode(value: Any) -> bytes:
    """The stored bytes of ``value``.

    Raises:
        TypeError: For a value that is not data (an object array, an arbitrary object).
    """
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError("the cache stores numeric arrays only, not object arrays")
        buffer = io.BytesIO()
        np.save(buffer, value, allow_pickle=False)
        return _NUMPY + buffer.getvalue()
    from video_env.backends.base import Answer
    from video_env.metrics.judges import Grade

    if isinstance(value, Answer):
        envelope: dict[str, Any] = {
            "type": "answer",
            "value": [value.text, value.confidence, list(value.token_probs),
                      value.n_visual_tokens],
        }  # fmt: skip
    elif isinstance(value, Grade):
        envelope = {"type": "grade", "value": [value.correct, value.score]}
    else:
        envelope = {"type": "json", "value": value}
    return _JSON + json.dumps(envelope, ensure_ascii=False, allow_nan=False).encode()


def decode(data: object) -> Any:
    """The value of stored bytes.

    Raises:
        CacheFormatError: If ``data`` is not what :func:`encode` writes.
    """
    if not isinstance(data, bytes) or not data:
        raise CacheFormatError(f"a cache entry is bytes, got {type(data).__name__}")
    head, body = data[:1], data[1:]
    try:
        if head == _NUMPY:
            array = np.load(io.BytesIO(body), allow_pickle=False)
            if not isinstance(array, np.ndarray):
                raise CacheFormatError("not a single array")
            return array
        if head == _JSON:
            return _from_envelope(json.loads(body.decode("utf-8")))
    except (ValueError, EOFError, OSError, RecursionError, UnicodeDecodeError) as exc:
        raise CacheFormatError(f"unreadable entry ({type(exc).__name__})") from None
    raise CacheFormatError("unknown entry format")


def _from_envelope(envelope: object) -> Any:
    if not isinstance(envelope, dict) or set(envelope) != {"type", "value"}:
        raise CacheFormatError("not a cache envelope")
    kind, value = envelope["type"], envelope["value"]
    if kind == "json":
        return value
    from video_env.backends.base import Answer
    from video_env.metrics.judges import Grade

    try:
        if kind == "answer":
            text, confidence, probs, tokens = value
            ok = isinstance(text, str) and _number(confidence) and isinstance(tokens, int)
            if not ok or not isinstance(probs, list) or not all(map(_number, probs)):
                raise CacheFormatError("malformed answer")
            return Answer(text, float(confidence), tuple(float(p) for p in probs), tokens)
        if kind == "grade":
            correct, score = value
            if not isinstance(correct, bool) or not _number(score):
                raise CacheFormatError("malformed grade")
            return Grade(correct, float(score))
    except (TypeError, ValueError, ConfigError) as exc:  # wrong arity, the types' own checks
        raise CacheFormatError(f"malformed {kind}: {exc}") from None
    raise CacheFormatError(f"unknown value type {kind!r}")


def _number(value: object) -> bool:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return ok and math.isfinite(value)  # type: ignore[arg-type]
