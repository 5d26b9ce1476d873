"""The OpenAI chat wire format as :class:`~video_env.backends.openai_vlm.OpenAIVLM` speaks it.

What goes into a request (frames as JPEG data URLs, a reply pattern in the field a server
reads it from) and what comes out of a response (its text, its token counts, the
probability of each generated token).
"""

from __future__ import annotations

import base64
import io
import math
from typing import Any

from PIL import Image

from video_env.backends.confidence import TokenProb, checked_logprob
from video_env.backends.llm.openai_compatible import token_count
from video_env.errors import BackendError

__all__ = [
    "REGEX_FIELDS",
    "jpeg_data_url",
    "message_text",
    "regex_request",
    "token_count",
    "token_probs",
]

#: The request fields a server reads a reply pattern from (``regex_field``).
REGEX_FIELDS = frozenset({"structured_outputs", "guided_regex", "regex"})


def regex_request(field: str, regex: str) -> dict[str, Any]:
    """The request's extra body that asks the server to keep the reply to ``regex``."""
    return (
        {"structured_outputs": {"regex": regex}}
        if field == "structured_outputs"
        else {field: regex}
    )


def jpeg_data_url(frame: Any, quality: int = 90) -> str:
    """A ``uint8[H, W, 3]`` frame as a ``data:image/jpeg;base64,...`` URL."""
    buffer = io.BytesIO()
    Image.fromarray(frame).save(buffer, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def message_text(response: Any) -> str:
    """The text of the response's first choice (empty when it has none)."""
    return str(getattr(response.choices[0].message, "content", None) or "")


def token_probs(response: Any, reply: str, backend: str) -> tuple[TokenProb, ...]:
    """The generated tokens of ``reply`` with their probabilities, from the ``logprobs``.

    Args:
        response: The server's response (asked for ``logprobs`` and ``top_logprobs``).
        reply: The reply's text.
        backend: The backend's name, for errors.

    Raises:
        BackendError: If a non-empty reply comes without log-probabilities, or with
            malformed ones (not numbers, not finite, or positive: see
            :func:`~video_env.backends.confidence.checked_logprob`): the confidence
            cannot be computed.
    """
    logprobs = getattr(response.choices[0], "logprobs", None)
    entries = list(getattr(logprobs, "content", None) or [])
    if not entries and reply:
        raise BackendError(
            f"{backend}: the server returned no logprobs, so the confidence cannot be "
            "computed. Serve a model that returns them (vLLM and OpenAI chat models do "
            "when asked), or choose confidence='verbal' to let the model state it"
        )
    tokens = []
    try:
        for entry in entries:
            chosen = math.exp(checked_logprob(entry.logprob))
            top = getattr(entry, "top_logprobs", None) or ()
            alternatives = [checked_logprob(a.logprob) for a in top]
            top1 = max([chosen, *(math.exp(lp) for lp in alternatives)])
            tokens.append(TokenProb(str(entry.token), top1, chosen))
    except (AttributeError, TypeError, ValueError) as exc:  # "very likely", NaN, +0.7
        raise BackendError(
            f"{backend}: the server returned malformed logprobs ({exc}), so the "
            "confidence cannot be computed"
        ) from None
    return tuple(tokens)
