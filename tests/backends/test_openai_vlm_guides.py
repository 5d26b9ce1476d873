"""Reply patterns sent to an OpenAI-compatible server (vLLM's or SGLang's structured outputs)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("openai")
pytest.importorskip("tenacity")
pytest.importorskip("regex")

import regex

from policies import run_episode
from policies.videoscout import VideoScoutPolicy
from video_env.backends.base import ReplyGuide
from video_env.backends.llm.testing import FakeOpenAIServer, chat_reply
from video_env.backends.openai_vlm import OpenAIVLM
from video_env.backends.registry import VLM_BASE_URL_ENV, VLM_REGEX_FIELD_ENV, openai_vlm
from video_env.envs import PacingEnv
from video_env.errors import ConfigError

PATTERN = ReplyGuide("", closed=("<b>",), patterns=(r"<a>[a-z]{0,3}</a>",))
REPLY = "<think>Beach.</think><memory>Seen: beach.</memory><action>speed(2x)</action>"


@pytest.fixture
def server() -> Any:
    with FakeOpenAIServer(default=chat_reply(REPLY)) as fake:
        yield fake


def make(server: FakeOpenAIServer, **kw: Any) -> OpenAIVLM:
    return OpenAIVLM("qwen-vl", base_url=server.base_url, max_retries=0, timeout_s=5.0, **kw)


@pytest.mark.parametrize(
    ("field", "sent"),
    [
        ("structured_outputs", lambda r: {"structured_outputs": {"regex": r}}),
        ("guided_regex", lambda r: {"guided_regex": r}),
        ("regex", lambda r: {"regex": r}),
    ],
)
def test_a_pattern_guide_goes_to_the_server_as_one_regex_in_its_field(
    server: FakeOpenAIServer, field: str, sent: Any
) -> None:
    vlm = make(server, regex_field=field)
    assert vlm.accepts_pattern_guide and vlm.config["regex_field"] == field
    vlm.chat([{"role": "user", "content": "go"}], guide=PATTERN)
    body = server.requests[-1].body
    assert {k: body[k] for k in sent("") if k in body} == sent(PATTERN.regex())
    assert regex.fullmatch(PATTERN.regex(), "<a>ab</a>") and regex.fullmatch(PATTERN.regex(), "<b>")
    vlm.chat([{"role": "user", "content": "go"}])
    assert not {"structured_outputs", "guided_regex", "regex"} & set(server.requests[-1].body)


def test_guides_a_server_cannot_take_fail_clearly(server: FakeOpenAIServer) -> None:
    plain = make(server)
    assert not plain.accepts_pattern_guide and "regex_field" not in plain.config
    with pytest.raises(ConfigError, match="regex_field"):
        plain.chat([{"role": "user", "content": "go"}], guide=PATTERN)
    marker = ReplyGuide("</memory>", closed=("<action>speed(2x)</action>",))
    with pytest.raises(ConfigError, match="patterns"):
        make(server, regex_field="regex").chat([{"role": "user", "content": "go"}], guide=marker)
    with pytest.raises(ConfigError, match="regex_field"):
        make(server, regex_field="grammar")
    assert not server.requests, "refused before any request"


def test_format_guided_videoscout_runs_on_a_server_that_takes_patterns(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VLM_BASE_URL_ENV, server.base_url)
    monkeypatch.setenv(VLM_REGEX_FIELD_ENV, "structured_outputs")
    vlm = openai_vlm("qwen-vl")
    assert vlm.regex_field == "structured_outputs" and vlm.accepts_pattern_guide
    with pytest.raises(ConfigError, match="legal-action decoding"):
        VideoScoutPolicy(vlm, guided=True)
    policy = VideoScoutPolicy(vlm, format_guided=True)
    env = PacingEnv("synth-tiny", **policy.env_kwargs["pacing"])
    record = run_episode(env, policy, seed=0, options={"index": 0}, max_steps=3)
    assert record["invalid_actions"] == 0 and len(server.requests) == 3
    for request in server.requests:
        pattern = request.body["structured_outputs"]["regex"]
        assert regex.fullmatch(pattern, REPLY), "the turn's pattern admits the reply"
        assert not regex.fullmatch(pattern, REPLY.replace("2x", "3x")), "not an illegal speed"
