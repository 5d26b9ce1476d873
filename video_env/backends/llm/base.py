"""The language-model contract that prompted policies use: messages in, a completion out.

An :class:`LLM` keeps a running :class:`~video_env.metrics.cost.Cost` in ``usage``
(``llm_calls``, ``prompt_tokens``, ``completion_tokens``, ``money_usd``) so policies can
report what an episode spent, and raises :class:`~video_env.errors.BackendError` when a
call fails for good (after its retries).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from video_env.metrics.cost import Cost

__all__ = ["LLM", "Completion", "Message", "estimate_tokens"]

Message = dict[str, str]
"""A chat message: ``{"role": "system" | "user" | "assistant", "content": "..."}``."""


@dataclass(frozen=True)
class Completion:
    """One reply of a language model.

    Attributes:
        text: The generated text.
        model: The model that answered (as the server names it).
        prompt_tokens: Tokens in the prompt.
        completion_tokens: Tokens generated.
        logprobs: Log-probability of each generated token, when asked for and given.
        finish_reason: Why generation stopped (``"stop"``, ``"length"``...), if known.
        latency_s: Wall-clock seconds of the call, retries included.
        usage_estimated: True when the server reported no token usage and the counts are
            the rough ``len(text) // 4`` estimate of :func:`estimate_tokens`.
        cost_usd: Price of the call from the backend's price table (0 for local models).
        token_ids: The generated token ids (end token included), where the backend has
            them (a model in memory); RL scores these rather than the text re-tokenized.
    """

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    logprobs: tuple[float, ...] | None = None
    finish_reason: str | None = None
    latency_s: float = 0.0
    usage_estimated: bool = False
    cost_usd: float = 0.0
    token_ids: tuple[int, ...] | None = None

    def cost(self) -> Cost:
        """This call as a :class:`Cost` (one LLM call, its tokens and its price)."""
        return Cost(
            llm_calls=1,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            money_usd=self.cost_usd,
        )


@runtime_checkable
class LLM(Protocol):
    """A chat language model with cost accounting."""

    name: str
    usage: Cost

    def chat(
        self,
        messages: Sequence[Message],
        *,
        json: bool = False,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        logprobs: bool = False,
    ) -> Completion:
        """Reply to ``messages``.

        Args:
            messages: The conversation, oldest first.
            json: Ask for a JSON object (the server's JSON mode where it has one).
            max_tokens: Cap on generated tokens (the backend's default if None).
            temperature: Sampling temperature; 0 is greedy.
            logprobs: Return the log-probability of each generated token.

        Returns:
            The completion.

        Raises:
            BackendError: If the call fails after the backend's retries.
        """
        ...


def estimate_tokens(text: str) -> int:
    """A rough token count (``len(text) // 4``, at least 1 for non-empty text)."""
    return max(1, len(text) // 4) if text else 0
