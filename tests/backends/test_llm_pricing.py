"""The price table and the LLM backend factory."""

import pytest

from video_env.backends.llm import DEFAULT_PRICES, Completion, lookup_price, make_llm, price
from video_env.backends.llm.config import public_url, redact, resolve_openai_settings
from video_env.errors import ConfigError


def test_known_models_and_prefixes() -> None:
    assert lookup_price("gpt-4o") == DEFAULT_PRICES["gpt-4o"]
    assert lookup_price("gpt-4o-2024-08-06") == DEFAULT_PRICES["gpt-4o"]
    assert lookup_price("gpt-4o-mini-2024-07-18") == DEFAULT_PRICES["gpt-4o-mini"]
    assert lookup_price("gpt-4.1-mini") == DEFAULT_PRICES["gpt-4.1-mini"]
    assert lookup_price("openai/o4-mini") == DEFAULT_PRICES["o4-mini"]
    assert lookup_price("gpt-4omega") == (0.0, 0.0)  # a prefix only counts before "-"


def test_unknown_and_local_models_are_free() -> None:
    assert price("Qwen/Qwen2.5-7B-Instruct", 10_000, 10_000) == 0.0
    assert price("llama3.2:3b", 5, 5) == 0.0


def test_price_arithmetic_and_override() -> None:
    assert price("gpt-4o", 1_000_000, 1_000_000) == pytest.approx(12.5)
    assert price("gpt-4o", 1000, 0, prices={"gpt-4o": (1.0, 1.0)}) == pytest.approx(0.001)
    assert price("gpt-4o", 1000, 0, prices={}) == 0.0
    with pytest.raises(ConfigError):
        price("gpt-4o", -1, 0)


def test_completion_cost() -> None:
    c = Completion("hi", "m", prompt_tokens=3, completion_tokens=2, cost_usd=0.5)
    cost = c.cost()
    assert (cost.llm_calls, cost.prompt_tokens, cost.completion_tokens) == (1, 3, 2)
    assert cost.money_usd == 0.5


def test_settings_repr_hides_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VIDEO_ENV_LLM_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    s = resolve_openai_settings("m", "http://127.0.0.1:9/v1", "sk-hidden-123")
    assert "sk-hidden-123" not in repr(s)
    local = resolve_openai_settings("m", "http://127.0.0.1:9/v1")
    assert local.api_key == "not-needed"


def test_redact_and_public_url() -> None:
    assert redact("key sk-abc and sk-abc", "sk-abc") == "key *** and ***"
    assert redact("nothing", None, "") == "nothing"
    assert public_url("https://u:p@host:8000/v1?key=1#x") == "https://host:8000/v1"
    assert public_url("http://[::1]:8000/v1") == "http://[::1]:8000/v1"
    assert public_url(None) is None


def test_make_llm_offline() -> None:
    assert make_llm(None) is None
    assert make_llm("") is None
