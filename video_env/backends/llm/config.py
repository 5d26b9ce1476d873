"""Settings of the OpenAI-compatible client, from arguments or the environment, and redaction.

API keys come from arguments or the environment only and never reach a log line, a
``repr``, run metadata or an error message: :func:`redact` scrubs them from any text
shown, and :func:`public_url` drops credentials from a base URL.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from video_env.errors import ConfigError

__all__ = [
    "API_KEY_ENV_VARS",
    "BASE_URL_ENV_VARS",
    "LOCAL_API_KEY",
    "MODEL_ENV_VAR",
    "OpenAISettings",
    "public_url",
    "redact",
    "resolve_openai_settings",
]

MODEL_ENV_VAR = "VIDEO_ENV_LLM_MODEL"
BASE_URL_ENV_VARS = ("VIDEO_ENV_LLM_BASE_URL", "OPENAI_BASE_URL")
API_KEY_ENV_VARS = ("VIDEO_ENV_LLM_API_KEY", "OPENAI_API_KEY")
LOCAL_API_KEY = "not-needed"
"""The placeholder key sent to local servers (vLLM, SGLang, Ollama, llama.cpp) that need none."""

_MASK = "***"


@dataclass(frozen=True)
class OpenAISettings:
    """Where and as whom to call: model, base URL (None: OpenAI's) and API key (not shown)."""

    model: str
    base_url: str | None
    api_key: str = field(repr=False)


def _first_env(names: tuple[str, ...]) -> str | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def resolve_openai_settings(
    model: str | None = None, base_url: str | None = None, api_key: str | None = None
) -> OpenAISettings:
    """Fill unset settings from the environment.

    ``model`` falls back to ``$VIDEO_ENV_LLM_MODEL``; ``base_url`` to
    ``$VIDEO_ENV_LLM_BASE_URL`` then ``$OPENAI_BASE_URL``; ``api_key`` to
    ``$VIDEO_ENV_LLM_API_KEY`` then ``$OPENAI_API_KEY``, then, when a base URL is set (a
    local server), to the placeholder :data:`LOCAL_API_KEY`.

    Raises:
        ConfigError: If no model is given, or no key for OpenAI's own API.
    """
    model = model or _first_env((MODEL_ENV_VAR,))
    if not model:
        raise ConfigError(f"no LLM model: pass model= or set ${MODEL_ENV_VAR}")
    base_url = base_url or _first_env(BASE_URL_ENV_VARS)
    api_key = api_key or _first_env(API_KEY_ENV_VARS)
    if not api_key:
        if base_url is None:
            names = " or ".join(f"${n}" for n in API_KEY_ENV_VARS)
            raise ConfigError(f"no API key for the OpenAI API: set {names}")
        api_key = LOCAL_API_KEY
    return OpenAISettings(model=model, base_url=base_url, api_key=api_key)


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every occurrence of each secret replaced by ``***``."""
    for secret in secrets:
        if secret and secret != LOCAL_API_KEY:
            text = text.replace(secret, _MASK)
    return text


def public_url(url: str | None) -> str | None:
    """``url`` without user name, password, query or fragment (where keys may hide)."""
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"  # IPv6
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
