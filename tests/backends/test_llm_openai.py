"""The OpenAI-compatible client against a scripted fake server on 127.0.0.1."""

import base64
import logging
import time
from collections.abc import Iterator
from urllib.parse import quote

import pytest

pytest.importorskip("openai")
pytest.importorskip("tenacity")

from video_env.backends.llm import (
    LLM,
    LLMCallError,
    OpenAICompatibleLLM,
    make_llm,
    price,
)
from video_env.backends.llm.testing import FakeOpenAIServer, FakeReply, chat_reply, error_reply
from video_env.errors import BackendError, ConfigError

KEY = "sk-test-SECRET-0123456789abcdef"
MESSAGES = [
    {"role": "system", "content": "You answer questions about videos."},
    {"role": "user", "content": "What colour is the umbrella? Reply in JSON."},
]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as s:
        yield s


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "VIDEO_ENV_LLM_MODEL",
        "VIDEO_ENV_LLM_BASE_URL",
        "VIDEO_ENV_LLM_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)


def make(server: FakeOpenAIServer, **kwargs: object) -> OpenAICompatibleLLM:
    options: dict[str, object] = {
        "model": "gpt-4o-mini",
        "base_url": server.base_url,
        "api_key": KEY,
        "timeout_s": 2.0,
        "max_retries": 3,
        "backoff_s": (0.01, 0.05),
    }
    options.update(kwargs)
    return OpenAICompatibleLLM(**options)  # type: ignore[arg-type]


def assert_no_key(*texts: object) -> None:
    for text in texts:
        assert KEY not in str(text)


def test_normal_reply_request_and_accounting(server: FakeOpenAIServer) -> None:
    server.script(chat_reply("red", model="gpt-4o-mini-2024-07-18", prompt_tokens=120))
    llm = make(server)
    assert isinstance(llm, LLM)
    done = llm.chat(MESSAGES, max_tokens=32)
    assert done.text == "red"
    assert done.model == "gpt-4o-mini-2024-07-18"
    assert (done.prompt_tokens, done.completion_tokens) == (120, 7)
    assert done.finish_reason == "stop" and done.logprobs is None and not done.usage_estimated
    assert done.latency_s > 0
    assert done.cost_usd == pytest.approx(price("gpt-4o-mini", 120, 7))
    assert done.cost_usd == pytest.approx((120 * 0.15 + 7 * 0.60) / 1e6)
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.body
    assert body["model"] == "gpt-4o-mini"
    assert body["messages"] == MESSAGES
    assert body["max_tokens"] == 32 and body["temperature"] == 0.0
    assert "response_format" not in body and "logprobs" not in body
    assert llm.usage.llm_calls == 1 and llm.usage.prompt_tokens == 120
    assert llm.usage.money_usd == pytest.approx(done.cost_usd)


def test_usage_accumulates_over_calls(server: FakeOpenAIServer) -> None:
    server.script(
        chat_reply("a", prompt_tokens=10, completion_tokens=2),
        chat_reply("b", prompt_tokens=30, completion_tokens=4),
    )
    llm = make(server, model="gpt-4.1")
    llm.chat(MESSAGES)
    llm.chat(MESSAGES)
    u = llm.usage
    assert (u.llm_calls, u.prompt_tokens, u.completion_tokens) == (2, 40, 6)
    assert u.money_usd == pytest.approx((40 * 2.0 + 6 * 8.0) / 1e6)


def test_json_mode_and_logprobs(server: FakeOpenAIServer) -> None:
    server.script(chat_reply('{"answer": "B"}', logprobs=[-0.1, -0.25, -2.0]))
    done = make(server).chat(MESSAGES, json=True, logprobs=True, temperature=0.7)
    assert done.text == '{"answer": "B"}'
    assert done.logprobs == pytest.approx((-0.1, -0.25, -2.0))
    body = server.requests[0].body
    assert body["response_format"] == {"type": "json_object"}
    assert body["logprobs"] is True and body["temperature"] == 0.7
    server.script(chat_reply("B", logprobs=[-0.1, 0.9]))  # 0.9: a probability above 1
    assert make(server).chat(MESSAGES, logprobs=True).logprobs is None  # not (-0.1, 0.0)


def test_missing_usage_is_estimated_and_flagged(server: FakeOpenAIServer) -> None:
    server.script(chat_reply("x" * 40, prompt_tokens=None))
    done = make(server, model="local-model").chat(MESSAGES, logprobs=True)
    assert done.usage_estimated
    assert done.completion_tokens == 10 and done.prompt_tokens > 0
    assert done.logprobs is None  # asked for, but the server gave none
    assert done.cost_usd == 0.0  # not in the price table


def test_custom_prices_and_extra_body(server: FakeOpenAIServer) -> None:
    server.script(chat_reply("ok", prompt_tokens=1_000_000, completion_tokens=0))
    llm = make(server, model="my-model", prices={"my-model": (3.0, 0.0)}, extra_body={"top_k": 5})
    assert llm.chat(MESSAGES).cost_usd == pytest.approx(3.0)
    assert server.requests[0].body["top_k"] == 5


def test_429_is_retried(server: FakeOpenAIServer) -> None:
    server.script(error_reply(429, "slow down"), chat_reply("ok"))
    llm = make(server)
    assert llm.chat(MESSAGES).text == "ok"
    assert len(server.requests) == 2
    assert llm.usage.llm_calls == 1 and llm.failed_calls == 0


def test_500_twice_then_success(server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture) -> None:
    server.script(error_reply(500), error_reply(503), chat_reply("ok"))
    with caplog.at_level(logging.WARNING, logger="video_env"):
        assert make(server).chat(MESSAGES).text == "ok"
    assert len(server.requests) == 3
    retries = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) == 2 and "HTTP 500" in retries[0].getMessage()


def test_persistent_5xx_fails_after_retries(server: FakeOpenAIServer) -> None:
    server.script(*[error_reply(502)] * 5)
    llm = make(server, max_retries=2)
    with pytest.raises(LLMCallError, match="after 3 attempts") as info:
        llm.chat(MESSAGES)
    assert info.value.status == 502 and info.value.attempts == 3 and info.value.retryable
    assert len(server.requests) == 3
    assert llm.failed_calls == 1 and llm.usage.llm_calls == 0


def test_timeout_is_retried_then_fails(server: FakeOpenAIServer) -> None:
    server.script(*[chat_reply("late", delay_s=3.0)] * 3)
    llm = make(server, timeout_s=0.2, max_retries=2)
    start = time.perf_counter()
    with pytest.raises(BackendError, match="timed out") as info:
        llm.chat(MESSAGES)
    assert time.perf_counter() - start < 2.5  # bounded: no hang
    assert len(server.requests) == 3 and info.value.attempts == 3  # type: ignore[attr-defined]


def test_timeout_then_success(server: FakeOpenAIServer) -> None:
    server.script(chat_reply("late", delay_s=3.0), chat_reply("on time"))
    assert make(server, timeout_s=0.2).chat(MESSAGES).text == "on time"
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    "bad",
    [
        FakeReply(body="<html><body>502 Bad Gateway</body></html>", content_type="text/html"),
        FakeReply(body={"id": "x", "object": "chat.completion"}),  # no choices
        FakeReply(body={"id": "x", "choices": []}),
        FakeReply(body="{not json", content_type="application/json"),
    ],
    ids=["html", "no-choices", "empty-choices", "broken-json"],
)
def test_invalid_body_is_retried_then_fails(server: FakeOpenAIServer, bad: FakeReply) -> None:
    server.script(*[bad] * 3)
    with pytest.raises(LLMCallError, match="after 3 attempts") as info:
        make(server, max_retries=2).chat(MESSAGES)
    assert info.value.status is None
    assert len(server.requests) == 3


def test_invalid_body_then_success(server: FakeOpenAIServer) -> None:
    server.script(FakeReply(body="<html>oops</html>", content_type="text/html"), chat_reply("ok"))
    assert make(server).chat(MESSAGES).text == "ok"
    assert len(server.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_fail_at_once(server: FakeOpenAIServer, status: int) -> None:
    server.script(error_reply(status, f"Incorrect API key provided: {KEY}"))
    llm = make(server)
    with pytest.raises(LLMCallError, match="not retried") as info:
        llm.chat(MESSAGES)
    assert info.value.status == status and info.value.attempts == 1
    assert not info.value.retryable
    assert len(server.requests) == 1
    assert_no_key(info.value, repr(info.value), info.value.__cause__, info.value.__context__)


def test_connection_refused_is_a_backend_error() -> None:
    with FakeOpenAIServer() as s:
        url = s.base_url  # the port is free again once closed
    llm = OpenAICompatibleLLM("m", url, KEY, timeout_s=1, max_retries=1, backoff_s=(0.01, 0.02))
    with pytest.raises(LLMCallError, match="connection"):
        llm.chat(MESSAGES)


def test_secrets_stay_out_of_repr_metadata_logs_and_errors(
    server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(error_reply(500, f"echo {KEY}"), chat_reply("ok"), error_reply(401, KEY))
    llm = make(server)
    with caplog.at_level(logging.DEBUG):
        llm.chat(MESSAGES)
        with pytest.raises(BackendError) as info:
            llm.chat(MESSAGES)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert caplog.records  # the retry was logged
    assert_no_key(repr(llm), llm.describe(), llm.name, caplog.text, info.value)
    assert "***" in caplog.text  # the echoed key was scrubbed
    assert llm.describe()["model"] == "gpt-4o-mini"
    assert llm.describe()["base_url"] == server.base_url


@pytest.mark.parametrize("user", ["user", ""])
def test_an_echoed_basic_header_leaks_no_form_of_the_key(
    server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture, user: str
) -> None:
    """A base URL with credentials: httpx sends them as Basic auth, which a server echoes."""
    password = "pw/" + KEY  # URL-encoded in the URL, decoded in the header
    url = server.base_url.replace("http://", f"http://{user}:{quote(password, safe='')}@")
    server.script(error_reply(500, "retry", echo_headers=True))
    server.script(error_reply(401, "denied", echo_headers=True))
    llm = make(server, base_url=url, max_retries=1)
    with caplog.at_level(logging.DEBUG), pytest.raises(BackendError) as info:
        llm.chat(MESSAGES)
    sent = server.requests[0].headers["authorization"]
    basic = base64.b64encode(f"{user}:{password}".encode()).decode()
    assert sent == f"Basic {basic}"  # what a careless server quotes back
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("video_env")]
    assert ours  # the retry was logged
    shown = "\n".join([str(info.value), *ours])
    assert "denied" in str(info.value) and "***" in shown
    for form in (KEY, password, quote(password, safe=""), basic, basic.rstrip("=")[4:]):
        assert form not in shown, form


def test_a_key_put_in_a_spec_is_not_shown() -> None:
    for spec in ("openai:m?api_key=" + KEY, "openai:m?timeout_s=" + KEY):
        with pytest.raises(ConfigError) as info:
            make_llm(spec)
        assert KEY not in str(info.value)
    with pytest.raises(ConfigError) as info:
        OpenAICompatibleLLM("m?api_key=" + KEY, "http://127.0.0.1:1/v1")
    assert KEY not in str(info.value)


def test_base_url_credentials_are_not_shown(server: FakeOpenAIServer) -> None:
    url = server.base_url.replace("http://", "http://user:pw@") + "?api-key=zzz"
    llm = make(server, base_url=url)
    assert "pw" not in repr(llm) and "zzz" not in str(llm.describe())


def test_settings_from_environment(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VIDEO_ENV_LLM_MODEL", "qwen2.5-7b")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    llm = OpenAICompatibleLLM(backoff_s=(0.01, 0.02))
    assert llm.model == "qwen2.5-7b" and llm.name == "openai:qwen2.5-7b"
    llm.chat(MESSAGES)
    assert server.requests[-1].headers["authorization"] == "Bearer not-needed"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fallback")
    monkeypatch.setenv("VIDEO_ENV_LLM_API_KEY", KEY)
    OpenAICompatibleLLM().chat(MESSAGES)
    assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_config_errors() -> None:
    with pytest.raises(ConfigError, match="model"):
        OpenAICompatibleLLM()
    with pytest.raises(ConfigError, match="API key"):
        OpenAICompatibleLLM("gpt-4o")  # OpenAI's own API needs a key
    with pytest.raises(ConfigError):
        OpenAICompatibleLLM("m", "http://127.0.0.1:1/v1", timeout_s=0)
    with pytest.raises(ConfigError):
        OpenAICompatibleLLM("m", "http://127.0.0.1:1/v1", backoff_s=(2.0, 1.0))


def test_make_llm(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    assert make_llm(None) is None and make_llm("  ") is None
    monkeypatch.setenv("VIDEO_ENV_LLM_BASE_URL", server.base_url)
    llm = make_llm("openai:gpt-4o")
    assert isinstance(llm, OpenAICompatibleLLM) and llm.model == "gpt-4o"
    ollama = make_llm("llama3.2:3b", timeout_s=5)
    assert isinstance(ollama, OpenAICompatibleLLM) and ollama.model == "llama3.2:3b"
    assert ollama.timeout_s == 5
    monkeypatch.setenv("VIDEO_ENV_LLM_MODEL", "from-env")
    env_llm = make_llm("openai:")
    assert isinstance(env_llm, OpenAICompatibleLLM) and env_llm.model == "from-env"
    with pytest.raises(ConfigError):
        make_llm("local:")
