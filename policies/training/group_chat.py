"""A DAPO group's shared first turn: one prompt, its G replies decoded together.

The ``G`` episodes of a group play one question from the same start, so their first turns
usually show the same frames and text. :class:`SharedTurnChat` wraps a chat that has
``chat_n`` (:class:`~policies.training.rollout.PolicyChat`,
:class:`~video_env.backends.transformers_vlm.TransformersVLM`): after :meth:`expect`
``(G)``, the next call samples ``G`` replies at once (one vision pass, one prefill, the
rows decoded together) and keeps the other ``G - 1``; a later call whose prompt and
decoding options are the same — the next episodes' first turns — takes one of them
instead of calling the model. A call that matches nothing goes to the model as usual, so
episodes whose first turns differ are played exactly as before. The replies are
independent samples of the same distribution as separate calls (identical under greedy
decoding).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from video_env.backends.base import FrameBatch, VisionMessage
from video_env.backends.llm.base import Completion
from video_env.metrics.cost import Cost

__all__ = ["SharedTurnChat", "prompt_key"]


def prompt_key(messages: Sequence[VisionMessage], options: dict[str, Any]) -> str:
    """A digest of a call: its messages (texts, frames' pixels, times, size) and options."""
    digest = hashlib.sha256()
    for message in messages:
        digest.update(f"<{message.get('role', 'user')}>".encode())
        content = message.get("content", "")
        for part in [content] if isinstance(content, str) else content:
            if isinstance(part, FrameBatch):
                pixels = np.ascontiguousarray(part.pixels())
                digest.update(f"frames{pixels.shape}{tuple(part.size)}".encode())
                digest.update(np.asarray(part.times, dtype=np.float64).tobytes())
                digest.update(pixels.tobytes())
            else:
                digest.update(f"text:{len(str(part))}:{part}".encode())
    digest.update(repr(sorted(options.items(), key=lambda kv: kv[0])).encode())
    return digest.hexdigest()


class SharedTurnChat:
    """A chat whose next call after :meth:`expect` serves that many identical calls.

    Args:
        inner: The model; its ``chat_n(messages, n, **options)`` gives ``n`` replies.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.simulated = inner.simulated
        self.accepts_guide = bool(getattr(inner, "accepts_guide", False))
        self.accepts_pattern_guide = bool(getattr(inner, "accepts_pattern_guide", False))
        self.pixel_vlm = bool(getattr(inner, "pixel_vlm", False))
        self.random_weights = bool(getattr(inner, "random_weights", False))
        self.usage: Cost = inner.usage
        self._expected = 1
        self._pending: dict[str, list[Completion]] = {}
        #: Calls served from a shared decode (no model call of their own).
        self.served = 0

    def expect(self, n: int) -> None:
        """Make the next call sample ``n`` replies; forget replies nobody took."""
        self._expected = max(1, n)
        self._pending.clear()

    def chat(self, messages: Sequence[VisionMessage], **options: Any) -> Completion:
        """A kept reply to this very prompt, else the model's (``n`` of them after expect)."""
        key = prompt_key(messages, options)
        kept = self._pending.get(key)
        if kept:
            self.served += 1
            return kept.pop()
        n, self._expected = self._expected, 1
        if n == 1:
            reply: Completion = self.inner.chat(messages, **options)
        else:
            replies: list[Completion] = list(self.inner.chat_n(messages, n, **options))
            reply = replies.pop(0)
            self._pending[key] = replies[::-1]  # taken in sampling order
        self.usage = self.inner.usage
        return reply
