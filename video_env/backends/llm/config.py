"""Settings of the OpenAI-compatible client, from arguments or the environment, and redaction.

API keys come from arguments or the environment only and never reach a log line, a
``repr``, run metadata or an error message: :func:`redact` scrubs them from any text
shown (as written, URL-encoded, or in base64 as a Basic ``Authorization`` header carries
them; a base URL's user and password count), and :func:`public_url` drops credentials
from a base URL.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from urllib.parse import quote, quote_plus, unquote, urlsplit, urlunsplit

from video_env import env_vars
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
    "secret_forms",
]

MODEL_ENV_VAR = env_vars.LLM_MODEL.name
BASE_URL_ENV_VARS = tuple(v.name for v in env_vars.LLM_BASE_URLS)
API_KEY_ENV_VARS = tuple(v.name for v in env_vars.LLM_API_KEYS)
LOCAL_API_KEY = "not-needed"
"""The placeholder key sent to local servers (vLLM, SGLang, Ollama, llama.cpp) that need none."""

_MASK = "***"
#: Fewest base64 characters of a secret that :func:`redact` masks (shorter runs: chance).
_MIN_BASE64 = 4
_URLSAFE = str.maketrans("+/", "-_")


@dataclass(frozen=True)
class OpenAISettings:
    """Where and as whom to call: model, base URL (None: OpenAI's) and API key (not shown)."""

    model: str
    base_url: str | None
    api_key: str = field(repr=False)


def _first_env(variables: tuple[env_vars.EnvVar, ...]) -> str | None:
    found = env_vars.first_set(variables)
    return found[1] if found else None


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
    model = model or _first_env((env_vars.LLM_MODEL,))
    if not model:
        raise ConfigError(f"no LLM model: pass model= or set ${MODEL_ENV_VAR}")
    base_url = base_url or _first_env(env_vars.LLM_BASE_URLS)
    api_key = api_key or _first_env(env_vars.LLM_API_KEYS)
    if not api_key:
        if base_url is None:
            names = " or ".join(f"${n}" for n in API_KEY_ENV_VARS)
            raise ConfigError(f"no API key for the OpenAI API: set {names}")
        api_key = LOCAL_API_KEY
    return OpenAISettings(model=model, base_url=base_url, api_key=api_key)


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every form of each secret replaced by ``***``.

    The forms (:func:`secret_forms`): the secret as is, URL-encoded, and in base64 at
    any offset, so that an ``Authorization: Basic base64(user:KEY)`` header a server
    echoes is caught too. A secret that is a URL stands for the credentials in its user
    part (``http://user:KEY@host``): the password, or a user name given alone, and the
    whole user part.
    """
    for form in sorted(secret_forms(*secrets), key=len, reverse=True):
        text = text.replace(form, _MASK)
    return text


def secret_forms(*secrets: str | None) -> set[str]:
    """The texts in which ``secrets`` may appear (see :func:`redact`).

    Args:
        *secrets: API keys, and base URLs (their credentials count; a URL without
            credentials adds nothing). ``None``, ``""`` and the placeholder
            :data:`LOCAL_API_KEY` add nothing.
    """
    forms: set[str] = set()
    for secret in secrets:
        for value in _credentials(secret) if _is_url(secret) else [secret]:
            if not value or value == LOCAL_API_KEY:
                continue
            for text in {value, unquote(value)}:
                forms |= {text, quote(text, safe=""), quote_plus(text, safe="")}
                forms |= _base64_cores(text.encode("utf-8"))
    return {form for form in forms if form}


def _is_url(value: str | None) -> bool:
    return bool(value) and "://" in str(value)


def _credentials(url: str | None) -> list[str]:
    """The secrets in a URL's user part.

    The password (or a user name given alone), and the whole user part as written and
    as a client sends it in a Basic header (decoded).
    """
    parts = urlsplit(url or "")
    userinfo, at, _ = parts.netloc.rpartition("@")
    if not at:
        return []
    user, colon, password = userinfo.partition(":")
    basic = f"{unquote(user)}:{unquote(password)}"  # what httpx encodes for Basic auth
    return [userinfo, basic, password if colon else user]


def _base64_cores(data: bytes) -> set[str]:
    """The base64 characters that encode ``data`` wherever it starts in a longer text.

    A byte string starting at offset 0, 1 or 2 (mod 3) of the encoded text is spelled by
    a fixed run of characters (those whose 6 bits all fall inside it), in standard and in
    URL-safe base64; runs of fewer than 4 characters are left out (they match by chance).
    """
    cores = set()
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + data).decode("ascii")
        core = encoded[-(-8 * offset // 6) : 8 * (offset + len(data)) // 6]
        if len(core) >= _MIN_BASE64:
            cores |= {core, core.translate(_URLSAFE)}
    return cores


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
