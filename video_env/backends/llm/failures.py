"""How the OpenAI-compatible client tells failures apart: retry, give up, and what to say.

Retried: rate limits and conflicts (408, 409, 429), server errors (5xx), timeouts,
connection errors, and replies that are not a chat completion. Not retried: other client
errors (400, 401, 403, 404, 422), where trying again cannot help. Failure texts are
redacted so that no API key reaches a log line or an error message.
"""

from __future__ import annotations

import contextlib
from types import ModuleType

from video_env.backends.llm.config import redact
from video_env.errors import BackendError

__all__ = ["InvalidReplyError", "LLMCallError", "describe_failure", "is_retryable", "retry_after_s"]

RETRY_STATUS = frozenset({408, 409, 429})
_MAX_DETAIL = 300


class LLMCallError(BackendError):
    """A chat call failed for good (after its retries, or at once when retrying is futile).

    Args:
        message: What happened (redacted).
        status: The HTTP status of the last attempt, if the server answered.
        attempts: How many requests were made.
        retryable: Whether the last failure was of a kind that is retried.
        unreachable: Whether no connection could be made (refused, unknown host; not a
            timeout).
    """

    def __init__(
        self,
        message: str,
        status: int | None,
        attempts: int,
        retryable: bool,
        unreachable: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts
        self.retryable = retryable
        self.unreachable = unreachable


class InvalidReplyError(Exception):
    """The server answered with a body that is not a chat completion (HTML, no choices)."""


def is_retryable(openai: ModuleType, exc: BaseException | None) -> bool:
    """Whether another attempt may succeed after ``exc``.

    Args:
        openai: The ``openai`` module (imported lazily by the caller).
        exc: The failure.
    """
    transient = (InvalidReplyError, openai.APIConnectionError, openai.APIResponseValidationError)
    if isinstance(exc, transient):  # APITimeoutError is an APIConnectionError
        return True
    if isinstance(exc, openai.APIStatusError):
        status = int(exc.status_code)
        return status in RETRY_STATUS or status >= 500
    return False


def describe_failure(
    openai: ModuleType, exc: BaseException | None, timeout_s: float, *secrets: str | None
) -> str:
    """A short, redacted description of ``exc`` for logs and error messages.

    Args:
        openai: The ``openai`` module.
        exc: The failure.
        timeout_s: The request timeout (named when it ran out).
        *secrets: The API key and the base URL (its credentials), masked in every form
            a server may echo them (:func:`~video_env.backends.llm.config.redact`).
    """
    if isinstance(exc, openai.APITimeoutError):
        text = f"timed out after {timeout_s:g}s"
    elif isinstance(exc, openai.APIStatusError):
        text = f"HTTP {exc.status_code}: {exc.message}"
    elif isinstance(exc, openai.APIConnectionError):
        text = f"connection error: {exc}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    return redact(text, *secrets)[:_MAX_DETAIL]


def retry_after_s(exc: BaseException | None) -> float | None:
    """The seconds a ``Retry-After`` header of the failed response asks for, if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    with contextlib.suppress(ValueError):  # an HTTP date: ignored
        return max(0.0, float(value))
    return None
