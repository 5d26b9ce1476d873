"""One chat client for every OpenAI-compatible server: OpenAI, vLLM, SGLang, Ollama, llama.cpp.

Calls go through the official ``openai`` SDK with its own retries off; `tenacity
<https://tenacity.readthedocs.io>`_ retries them with exponential backoff and jitter on
rate limits (408, 409, 429), server errors (5xx), timeouts, connection errors and reply
bodies that are not a chat completion (HTML from a proxy, no ``choices``). Other client
errors (400, 401, 403, 404, 422) fail at once. A call that fails for good raises
:class:`LLMCallError`, which the caller records; it never hangs past
``(max_retries + 1) * timeout_s`` plus the backoff.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from video_env._optional import require
from video_env.backends.confidence import checked_logprob
from video_env.backends.llm.base import Completion, Message, estimate_tokens
from video_env.backends.llm.config import public_url, resolve_openai_settings
from video_env.backends.llm.failures import (
    InvalidReplyError,
    LLMCallError,
    describe_failure,
    is_retryable,
    retry_after_s,
)
from video_env.backends.llm.pricing import PriceTable, lookup_price, price
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost

__all__ = ["OpenAICompatibleLLM", "choice_logprobs", "token_count"]

log = logging.getLogger(__name__)

#: HTTP statuses that say the settings are wrong (key, permission, model or URL).
SETTINGS_STATUSES = (401, 403, 404)
#: Default seconds one request may take, and retries after the first attempt.
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_RETRIES = 4


class OpenAICompatibleLLM:
    """A chat model behind an OpenAI-compatible HTTP API.

    Args:
        model: Model name; ``$VIDEO_ENV_LLM_MODEL`` if None.
        base_url: Server URL, e.g. ``http://localhost:8000/v1`` for vLLM;
            ``$VIDEO_ENV_LLM_BASE_URL`` or ``$OPENAI_BASE_URL`` if None, else OpenAI's.
        api_key: API key; ``$VIDEO_ENV_LLM_API_KEY`` or ``$OPENAI_API_KEY`` if None, or
            a placeholder for local servers. Never logged or shown.
        timeout_s: Seconds one request may take (also ``?timeout_s=`` in an LLM spec,
            ``--llm-timeout`` in ``video-env bench``).
        max_retries: Retries after the first attempt (``?max_retries=``,
            ``--llm-retries``). A call never takes longer than
            ``(max_retries + 1) * timeout_s`` plus the backoff.
        backoff_s: ``(first, cap)`` wait before a retry; it doubles per retry up to the
            cap, plus up to ``first`` seconds of random jitter. A ``Retry-After`` header
            (capped) is honoured.
        prices: Price table for ``money_usd`` (see :mod:`~video_env.backends.llm.pricing`).
        extra_body: Extra JSON fields for every request (e.g. vLLM sampling options).
        role: What the model is for, as log lines and errors name it (``"LLM"``, or
            ``"VLM"`` for :class:`~video_env.backends.openai_vlm.OpenAIVLM`).

    Raises:
        ConfigError: On missing model or key, or bad timeout, retry or backoff values.
        BackendNotInstalled: If the ``llm`` extra is not installed.
    """

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_s: tuple[float, float] = (1.0, 20.0),
        prices: PriceTable | None = None,
        extra_body: Mapping[str, Any] | None = None,
        role: str = "LLM",
    ) -> None:
        if not timeout_s > 0 or max_retries < 0:
            raise ConfigError("timeout_s must be > 0 and max_retries >= 0")
        if not 0 <= backoff_s[0] <= backoff_s[1]:
            raise ConfigError(
                f"backoff_s must be (first, cap) with 0 <= first <= cap, got {backoff_s}"
            )
        if model is not None and "?" in model:  # "m?api_key=...": what follows is not shown
            raise ConfigError(
                f"model {model.partition('?')[0]!r} is followed by '?...' (not shown): an "
                "OpenAI-compatible model takes no options there but timeout_s and max_retries "
                "of an --llm spec; an API key goes in $VIDEO_ENV_LLM_API_KEY or $OPENAI_API_KEY"
            )
        settings = resolve_openai_settings(model, base_url, api_key)
        self._openai = require("openai", "llm", "the OpenAI-compatible LLM backend")
        self._tenacity = require("tenacity", "llm", "retrying LLM calls")
        self.model = settings.model
        self.base_url = settings.base_url
        self._api_key = settings.api_key
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = (float(backoff_s[0]), float(backoff_s[1]))
        first, cap = self.backoff_s  # first * 2**n capped, plus jitter (any tenacity >= 8.2)
        self._backoff = self._tenacity.wait_exponential(
            multiplier=first, max=cap
        ) + self._tenacity.wait_random(0, first)
        self.prices = prices
        self.extra_body = dict(extra_body) if extra_body else None
        self.name = f"openai:{self.model}"
        self.role = role
        self.usage = Cost()
        self.failed_calls = 0
        self._lock = threading.Lock()
        self._client = self._openai.OpenAI(
            api_key=settings.api_key,
            base_url=settings.base_url,
            timeout=self.timeout_s,
            max_retries=0,
        )

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM(model={self.model!r}, base_url={public_url(self.base_url)!r})"

    def describe(self) -> dict[str, Any]:
        """Settings for run metadata (no key)."""
        return {
            "backend": "openai-compatible",
            "model": self.model,
            "base_url": public_url(self.base_url) or "https://api.openai.com/v1",
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "backoff_s": list(self.backoff_s),
        }

    def chat(
        self,
        messages: Sequence[Message],
        *,
        json: bool = False,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        logprobs: bool = False,
    ) -> Completion:
        """Reply to ``messages`` (see :class:`~video_env.backends.llm.base.LLM`).

        Raises:
            LLMCallError: If the call fails after its retries, or at once on a client
                error such as 401.
        """
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": temperature,
        }
        if json:
            params["response_format"] = {"type": "json_object"}
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        if logprobs:
            params["logprobs"] = True
        if self.extra_body:
            params["extra_body"] = self.extra_body
        start = time.perf_counter()
        response = self.send(params)
        completion = self._completion(response, messages, logprobs, time.perf_counter() - start)
        with self._lock:
            self.usage = self.usage + completion.cost()
        log.debug(
            "%s %s: %d prompt + %d completion tokens in %.2fs",
            self.role,
            self.name,
            completion.prompt_tokens,
            completion.completion_tokens,
            completion.latency_s,
        )
        return completion

    def send(self, params: dict[str, Any], *, retries: int | None = None) -> Any:
        """One chat-completions request as is, with the client's retries and accounting.

        The request path :meth:`chat` uses (timeouts, retries of 408/409/429/5xx with
        backoff, ``failed_calls``), for callers that build their own request, such as
        :class:`~video_env.backends.openai_vlm.OpenAIVLM` with its images. Usage is not
        added: the caller counts it.

        Args:
            params: Keyword arguments of ``client.chat.completions.create``.
            retries: Retries after the first attempt (default: ``max_retries``).

        Returns:
            The SDK's response.

        Raises:
            LLMCallError: If the request fails after its retries, or at once on a client
                error such as 401.
        """
        tn = self._tenacity
        retrying = tn.Retrying(
            stop=tn.stop_after_attempt((self.max_retries if retries is None else retries) + 1),
            wait=self._wait,
            retry=tn.retry_if_exception(self._retryable),
            before_sleep=self._log_retry,
            reraise=True,
        )
        attempts = 0
        try:
            for attempt in retrying:
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    return self._request(params)
        except (self._openai.OpenAIError, InvalidReplyError) as exc:
            error = self._failure(exc, attempts)
        else:  # pragma: no cover - tenacity either returns or raises
            raise AssertionError("unreachable")
        # raised outside the handler, so the SDK's exception (request, headers) is not chained
        raise error

    def _failure(self, exc: BaseException, attempts: int) -> LLMCallError:
        with self._lock:
            self.failed_calls += 1
        retryable = self._retryable(exc)
        plural = "" if attempts == 1 else "s"
        tail = f"after {attempts} attempt{plural}" if retryable else "(not retried)"
        message = f"{self.role} call to {self.name} failed {tail}: {self._detail(exc)}"
        openai = self._openai
        unreachable = isinstance(exc, openai.APIConnectionError) and not isinstance(
            exc, openai.APITimeoutError
        )
        return LLMCallError(
            message, getattr(exc, "status_code", None), attempts, retryable, unreachable
        )

    def check_server(self) -> None:
        """Fail fast when the server is unreachable or refuses the settings.

        One request of at most 2 tokens, not retried. A refused connection (nothing
        listening, a wrong host) and HTTP 401/403/404 (key, permission, model or URL) are
        settings a run cannot recover from; other failures (timeouts, 5xx) are left to
        the run, which records them per episode.

        Raises:
            ConfigError: Naming the role, the server and what to check.
        """
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": "Reply with the word OK."}],
            "max_tokens": 2,
        }
        try:
            self.send(params, retries=0)
        except LLMCallError as exc:
            where = public_url(self.base_url) or "https://api.openai.com/v1"
            if exc.unreachable:
                raise ConfigError(
                    f"{exc}; no {self.role} server answers at {where}: start it, or fix the "
                    "base URL"
                ) from None
            if exc.status in SETTINGS_STATUSES:
                raise ConfigError(
                    f"{exc}; check the API key, the model name and the base URL ({where}) "
                    f"of the {self.role}"
                ) from None

    def _request(self, params: dict[str, Any]) -> Any:
        try:
            response = self._client.chat.completions.create(**params)
        except ValueError as exc:  # the body is not JSON, or not the expected shape
            raise InvalidReplyError(
                f"reply body is not valid JSON ({type(exc).__name__})"
            ) from None
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            kind = type(response).__name__
            raise InvalidReplyError(f"reply is not a chat completion (a {kind} with no choices)")
        if getattr(choices[0], "message", None) is None:
            raise InvalidReplyError("reply choice has no message")
        return response

    def _retryable(self, exc: BaseException) -> bool:
        return is_retryable(self._openai, exc)

    def _wait(self, state: Any) -> float:
        wait = float(self._backoff(state))
        retry_after = retry_after_s(state.outcome.exception() if state.outcome else None)
        if retry_after is not None:  # honour the server's Retry-After, up to the cap
            wait = max(wait, min(retry_after, self.backoff_s[1]))
        return wait

    def _log_retry(self, state: Any) -> None:
        exc = state.outcome.exception() if state.outcome else None
        sleep = state.next_action.sleep if state.next_action else 0.0
        log.warning(
            "%s %s: attempt %d failed (%s); retrying in %.2fs",
            self.role,
            self.name,
            state.attempt_number,
            self._detail(exc),
            sleep,
        )

    def _detail(self, exc: BaseException | None) -> str:
        return describe_failure(self._openai, exc, self.timeout_s, self._api_key, self.base_url)

    def _completion(
        self, response: Any, messages: Sequence[Message], logprobs: bool, latency_s: float
    ) -> Completion:
        choice = response.choices[0]
        text = _text_of(getattr(choice.message, "content", None) or "")
        usage = getattr(response, "usage", None)
        prompt = token_count(getattr(usage, "prompt_tokens", None))
        completion = token_count(getattr(usage, "completion_tokens", None))
        # usage missing or malformed ("lots", -1, NaN): unknown, hence estimated
        estimated = prompt is None or completion is None
        if prompt is None:
            prompt = sum(estimate_tokens(_text_of(m.get("content", ""))) for m in messages)
        if completion is None:
            completion = estimate_tokens(text)
        prompt_tokens, completion_tokens = prompt, completion
        served = getattr(response, "model", None)
        model = served if isinstance(served, str) and served else self.model
        # price by the served snapshot's name if the table knows it, else by the asked name
        billed = model if lookup_price(model, self.prices) != (0.0, 0.0) else self.model
        return Completion(
            text=text,
            model=model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            logprobs=choice_logprobs(choice) if logprobs else None,
            finish_reason=getattr(choice, "finish_reason", None),
            latency_s=latency_s,
            usage_estimated=estimated,
            cost_usd=price(billed, prompt_tokens, completion_tokens, self.prices),
        )


def token_count(value: Any) -> int | None:
    """A token count the server reported, or ``None`` if missing or not a count.

    Not a count: not a number, negative, fractional, NaN or infinite (the caller then
    estimates it, and says so).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or value < 0 or value != int(value):
        return None
    return int(value)


def _text_of(content: Any) -> str:
    """The text of a message's content (a string, or parts of which some are text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content) if content is not None else ""


def choice_logprobs(choice: Any) -> tuple[float, ...] | None:
    """A chat choice's token log-probabilities; None when absent, empty or malformed.

    Malformed includes a log-probability that is not finite or above 0 (see
    :func:`~video_env.backends.confidence.checked_logprob`).
    """
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    try:
        return tuple(checked_logprob(token.logprob) for token in content)
    except (AttributeError, TypeError, ValueError):  # malformed: not numbers, NaN, > 0
        return None
