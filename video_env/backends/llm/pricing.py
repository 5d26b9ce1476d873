"""Approximate list prices of hosted chat models, for the ``money_usd`` of a run.

Prices are US dollars per one million tokens, ``(prompt, completion)``, as listed on the
OpenAI pricing page when this table was written (2025-06; standard tier, no caching or
batch discounts). They change: pass ``prices=`` to a backend to use your own. Models not
in the table (local servers, open-weight models) cost 0. Dated snapshots such as
``gpt-4o-2024-08-06`` match their base name by the longest prefix.
"""

from __future__ import annotations

from collections.abc import Mapping

from video_env.errors import ConfigError

__all__ = ["DEFAULT_PRICES", "PriceTable", "lookup_price", "price"]

PriceTable = Mapping[str, tuple[float, float]]
"""Model name (or prefix) → ``(USD per 1M prompt tokens, USD per 1M completion tokens)``."""

DEFAULT_PRICES: PriceTable = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o4-mini": (1.10, 4.40),
    "o3": (2.00, 8.00),
}


def lookup_price(model: str, prices: PriceTable | None = None) -> tuple[float, float]:
    """The ``(prompt, completion)`` price per 1M tokens of ``model`` (0, 0 if unknown).

    The longest table key that ``model`` equals or starts with (followed by ``-``) wins,
    so ``gpt-4o-mini-2024-07-18`` is priced as ``gpt-4o-mini``, not ``gpt-4o``. A
    provider prefix such as ``openai/`` is ignored.
    """
    table = DEFAULT_PRICES if prices is None else prices
    name = model.rsplit("/", 1)[-1]
    best = ""
    for key in table:
        if (name == key or name.startswith(key + "-")) and len(key) > len(best):
            best = key
    return table[best] if best else (0.0, 0.0)


def price(
    model: str, prompt_tokens: int, completion_tokens: int, prices: PriceTable | None = None
) -> float:
    """The approximate price in USD of one call.

    Args:
        model: Model name, e.g. ``"gpt-4o-mini"`` or a dated snapshot of it.
        prompt_tokens: Prompt tokens of the call.
        completion_tokens: Completion tokens of the call.
        prices: A price table to use instead of :data:`DEFAULT_PRICES`.

    Returns:
        The price in USD (0 for models not in the table).

    Raises:
        ConfigError: If a token count or a table price is negative.
    """
    if prompt_tokens < 0 or completion_tokens < 0:
        raise ConfigError("token counts must be >= 0")
    per_prompt, per_completion = lookup_price(model, prices)
    if per_prompt < 0 or per_completion < 0:
        raise ConfigError(f"negative price for {model!r} in the price table")
    return (prompt_tokens * per_prompt + completion_tokens * per_completion) / 1_000_000
