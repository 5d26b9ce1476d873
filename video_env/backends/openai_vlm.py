"""A VLM behind an OpenAI-compatible chat API (vLLM / SGLang serving Qwen2.5-VL, GPT-4o, ...).

The same three roles as :class:`~video_env.backends.transformers_vlm.TransformersVLM`
(``VLM``, ``Captioner``, ``VisionChat``) and the same prompts. Each frame of a batch is
sent as a ``data:image/jpeg;base64`` URL at the batch's size (``jpeg_quality``), in time
order after the question text. Answers ask for ``logprobs`` and ``top_logprobs`` and take
their confidence from them with the rules of :mod:`video_env.backends.confidence` (the
tokens are those the server reports: OpenAI reports no end token). A server that returns
no log-probabilities is an error that says so; the ``"verbal"`` rule (the model states
its confidence) is used only when asked for.

Requests go through :class:`~video_env.backends.llm.OpenAICompatibleLLM`'s client:
its timeouts, retries with backoff on 408/409/429/5xx and error messages (keys scrubbed).
A call that fails for good raises :class:`~video_env.backends.llm.LLMCallError` (a
``BackendError``), which the episode runner records before going on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from video_env import env_vars
from video_env.backends import vlm_prompts as prompts
from video_env.backends.base import Answer, FrameBatch, ReplyGuide, VisionMessage
from video_env.backends.confidence import (
    TokenProb,
    check_rule,
    confidence,
    option_letters,
    parse_verbal_confidence,
    verbal_instruction,
)
from video_env.backends.llm.base import Completion, estimate_tokens
from video_env.backends.llm.openai_compatible import OpenAICompatibleLLM, choice_logprobs
from video_env.backends.llm.pricing import PriceTable, price
from video_env.backends.openai_wire import (
    REGEX_FIELDS,
    jpeg_data_url,
    message_text,
    regex_request,
    token_count,
    token_probs,
)
from video_env.backends.vlm_frames import message_parts
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost

__all__ = ["REGEX_FIELDS", "OpenAIVLM", "jpeg_data_url", "regex_request"]

log = logging.getLogger(__name__)


class OpenAIVLM:
    """``VLM``, ``Captioner`` and ``VisionChat`` over an OpenAI-compatible server.

    Args:
        model: The served model name (``Qwen/Qwen2.5-VL-7B-Instruct`` on vLLM,
            ``gpt-4o-mini``...).
        base_url: Server URL (``http://localhost:8000/v1``); OpenAI's API if None (see
            :func:`~video_env.backends.llm.resolve_openai_settings`).
        api_key_env: Environment variable holding the API key (never logged).
        jpeg_quality: JPEG quality of the frames sent (1-95).
        confidence: ``"falconeye"`` (default), ``"sequence"``, ``"mean"`` or ``"verbal"``.
        top_logprobs: Alternatives asked per token (the top-1 probability needs 1).
        image_detail: OpenAI's ``detail`` of each image (``"low"``, ``"high"``, ``"auto"``);
            not sent if None.
        answer_max_tokens: New-token cap of answers; FALCON-Bench's (64 MCQ, 128 open)
            if None.
        max_concurrent: Windows of one :meth:`answer_batch` in flight at once.
        timeout_s: Seconds one request may take.
        max_retries: Retries after the first attempt.
        backoff_s: ``(first, cap)`` retry wait (see ``OpenAICompatibleLLM``).
        prices: Price table for ``money_usd``.
        regex_field: Where a reply pattern goes in the request, so that :meth:`chat` takes
            a :class:`~video_env.backends.base.ReplyGuide` with patterns (VideoScout's
            format-guided decoding; the server's grammar engine masks the tokens):
            ``"structured_outputs"`` (current vLLM, the only field from 0.12 on:
            ``{"structured_outputs": {"regex": ...}}``), ``"guided_regex"`` (vLLM before
            0.12) or ``"regex"`` (SGLang). None: no guide is taken.

    Raises:
        ConfigError: On a bad setting or a missing key for OpenAI's own API.
        BackendNotInstalled: If the ``llm`` extra is missing.
    """

    simulated = False

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        jpeg_quality: int = 90,
        confidence: str = "falconeye",
        top_logprobs: int = 5,
        image_detail: str | None = None,
        answer_max_tokens: int | None = None,
        max_concurrent: int = 8,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        backoff_s: tuple[float, float] = (1.0, 20.0),
        prices: PriceTable | None = None,
        regex_field: str | None = None,
    ) -> None:
        if regex_field is not None and regex_field not in REGEX_FIELDS:
            raise ConfigError(
                f"regex_field must be one of {sorted(REGEX_FIELDS)}, got {regex_field!r}"
            )
        if not 1 <= jpeg_quality <= 95 or not 1 <= top_logprobs <= 20 or max_concurrent < 1:
            raise ConfigError("jpeg_quality must be 1-95, top_logprobs 1-20, max_concurrent >= 1")
        self.confidence_rule = check_rule(confidence)
        self._llm = OpenAICompatibleLLM(
            model,
            base_url,
            env_vars.read(api_key_env),
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            prices=prices,
            role="VLM",
        )
        self.model = model
        self.jpeg_quality = jpeg_quality
        self.top_logprobs = top_logprobs
        self.image_detail = image_detail
        self.answer_max_tokens = answer_max_tokens
        self.max_concurrent = max_concurrent
        self.prices = prices
        self.regex_field = regex_field
        self.name = f"openai:{model}"
        self.usage = Cost()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIVLM({self.model!r}, base_url={self._llm.describe()['base_url']!r})"

    @property
    def accepts_pattern_guide(self) -> bool:
        """Whether ``chat`` takes a guide with patterns (one regex per request)."""
        return self.regex_field is not None

    @property
    def config(self) -> dict[str, object]:
        """Everything that changes this backend's outputs (for caches and run metadata)."""
        return {
            "backend": "openai",
            "model": self.model,
            "base_url": self._llm.describe()["base_url"],
            "jpeg_quality": self.jpeg_quality,
            "image_detail": self.image_detail,
            "confidence": self.confidence_rule,
            "top_logprobs": self.top_logprobs,
            "generation": {"temperature": 0.0, "answer_max_tokens": self._caps()},
            "prompts": prompts.prompts_digest(),
            **({"regex_field": self.regex_field} if self.regex_field else {}),
        }

    def check_server(self) -> None:
        """Fail fast when the VLM server is unreachable or refuses the settings.

        Raises:
            ConfigError: See :meth:`OpenAICompatibleLLM.check_server`.
        """
        self._llm.check_server()

    # -- VLM ---------------------------------------------------------------------------

    def answer(
        self, frames: FrameBatch, question: str, options: Sequence[str] | None = None
    ) -> Answer:
        """Answer ``question`` (an MCQ with ``options``) from ``frames``, with a confidence.

        Raises:
            BackendError: If the server returns no log-probabilities (rules other than
                ``"verbal"``), or the call fails after its retries (``LLMCallError``).
        """
        text = prompts.question_prompt(question, options)
        verbal = self.confidence_rule == "verbal"
        if verbal:
            text = f"{text}\n{verbal_instruction()}"
        params = self._params(
            [prompts.system_message(), self._user([text, frames])],
            self._caps()["mcq" if options else "open"],
            logprobs=not verbal,
        )
        response, prompt_tokens, completion_tokens = self._call(params, [text])
        reply = message_text(response)
        tokens: tuple[TokenProb, ...] = ()
        stated = None
        if verbal:
            reply, stated = parse_verbal_confidence(reply)
        else:
            tokens = token_probs(response, reply, self.name)
        conf = confidence(self.confidence_rule, tokens, option_letters(options), stated)
        visual = max(0, prompt_tokens - estimate_tokens(prompts.SYSTEM_PROMPT + text))
        self._add(Cost(vlm_calls=1, frames=len(frames), visual_tokens=visual), prompt_tokens,
                  completion_tokens)  # fmt: skip
        return Answer(reply.strip(), conf, tuple(t.top1 for t in tokens), visual)

    def answer_batch(
        self, batches: Sequence[FrameBatch], question: str, options: Sequence[str] | None = None
    ) -> list[Answer]:
        """Answer on several windows, ``max_concurrent`` requests in flight (the server batches)."""
        if len(batches) <= 1 or self.max_concurrent == 1:
            return [self.answer(b, question, options) for b in batches]
        with ThreadPoolExecutor(min(self.max_concurrent, len(batches))) as pool:
            return list(pool.map(lambda b: self.answer(b, question, options), batches))

    # -- Captioner ---------------------------------------------------------------------

    def caption(
        self, frames: FrameBatch, max_tokens: int = prompts.CAPTION_MAX_TOKENS, style: str = "light"
    ) -> str:
        """A caption of ``frames`` in ``style`` (at most ``max_tokens`` new tokens)."""
        if max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1, got {max_tokens}")
        text = prompts.caption_prompt(style)
        params = self._params([prompts.system_message(), self._user([text, frames])], max_tokens)
        response, prompt_tokens, completion_tokens = self._call(params, [text])
        visual = max(0, prompt_tokens - estimate_tokens(prompts.SYSTEM_PROMPT + text))
        cost = Cost(caption_calls=1, frames=len(frames), visual_tokens=visual)
        self._add(cost, prompt_tokens, completion_tokens)
        return message_text(response).strip()

    # -- VisionChat --------------------------------------------------------------------

    def chat(
        self,
        messages: Sequence[VisionMessage],
        *,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        guide: ReplyGuide | None = None,
    ) -> Completion:
        """Continue ``messages`` (content: text and frame batches).

        ``guide``, a guide with patterns, goes to the server as one regular expression in
        ``regex_field`` (see the class).

        Returns:
            The completion; ``logprobs`` when the server sent them (not asked for, so
            that servers without them work).

        Raises:
            ConfigError: On a bad setting, or a guide the server cannot take (no
                ``regex_field``, or a guide without patterns).
        """
        if max_new_tokens < 1 or temperature < 0:
            raise ConfigError("max_new_tokens must be >= 1 and temperature >= 0")
        guide_body = self._guide_body(guide)
        start = time.perf_counter()
        body = []
        texts: list[str] = []
        frames = 0
        for message in messages:
            parts = message_parts(message)
            texts.extend(p for p in parts if isinstance(p, str))
            frames += sum(len(p) for p in parts if isinstance(p, FrameBatch))
            body.append(self._user(parts, role=str(message.get("role", "user"))))
        params = self._params(body, max_new_tokens, temperature=temperature)
        if guide_body is not None:
            params["extra_body"] = guide_body
        response, prompt_tokens, completion_tokens = self._call(params, texts)
        visual = max(0, prompt_tokens - sum(estimate_tokens(t) for t in texts))
        self._add(Cost(vlm_calls=1, frames=frames, visual_tokens=visual), prompt_tokens,
                  completion_tokens)  # fmt: skip
        choice = response.choices[0]
        return Completion(
            text=message_text(response),
            model=getattr(response, "model", None) or self.model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            logprobs=choice_logprobs(choice),
            finish_reason=getattr(choice, "finish_reason", None),
            latency_s=time.perf_counter() - start,
            cost_usd=price(self.model, prompt_tokens, completion_tokens, self.prices),
        )

    # -- internals ---------------------------------------------------------------------

    def _guide_body(self, guide: ReplyGuide | None) -> dict[str, Any] | None:
        """The request's extra body for ``guide`` (``None`` without one).

        Raises:
            ConfigError: For a guide this server cannot take.
        """
        if guide is None:
            return None
        if self.regex_field is None or not guide.patterns:
            raise ConfigError(
                f"{self.name} takes only guides with patterns, and only with regex_field set"
            )
        return regex_request(self.regex_field, guide.regex())

    def _caps(self) -> dict[str, int]:
        if self.answer_max_tokens is not None:
            return {"mcq": self.answer_max_tokens, "open": self.answer_max_tokens}
        return dict(prompts.ANSWER_MAX_TOKENS)

    def _user(self, parts: Sequence[str | FrameBatch], role: str = "user") -> dict[str, Any]:
        if role != "user" and all(isinstance(p, str) for p in parts):
            return {"role": role, "content": "".join(p for p in parts if isinstance(p, str))}
        content: list[dict[str, Any]] = []
        for part in parts:
            if isinstance(part, str):
                content.append({"type": "text", "text": part})
                continue
            for frame in part.pixels():
                image: dict[str, Any] = {"url": jpeg_data_url(frame, self.jpeg_quality)}
                if self.image_detail is not None:
                    image["detail"] = self.image_detail
                content.append({"type": "image_url", "image_url": image})
        return {"role": role, "content": content}

    def _params(
        self,
        messages: list[dict[str, Any]],
        max_tokens: int,
        *,
        logprobs: bool = False,
        temperature: float = 0.0,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        if logprobs:
            params.update(logprobs=True, top_logprobs=self.top_logprobs)
        return params

    def _call(self, params: dict[str, Any], texts: Sequence[str]) -> tuple[Any, int, int]:
        # the LLM client's request path: its timeouts, retries, failure accounting
        response = self._llm.send(params)
        usage = getattr(response, "usage", None)
        reported = [getattr(usage, f"{k}_tokens", None) for k in ("prompt", "completion")]
        prompt, completion = (token_count(value) for value in reported)
        if usage is not None and (prompt is None or completion is None):
            log.warning(  # NaN, -1, "lots": not counts; the call itself is sound
                "VLM %s: the server reported token counts %s, not counts; estimated",
                self.name,
                [str(value)[:20] for value in reported],
            )
        if prompt is None:  # missing or malformed usage: a rough estimate of the text alone
            prompt = sum(estimate_tokens(t) for t in texts)
        if completion is None:
            completion = estimate_tokens(message_text(response))
        return response, prompt, completion

    def _add(self, cost: Cost, prompt_tokens: int, completion_tokens: int) -> None:
        money = price(self.model, prompt_tokens, completion_tokens, self.prices)
        with self._lock:
            self.usage = self.usage + cost + Cost(money_usd=money)
