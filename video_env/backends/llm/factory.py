"""Build an LLM backend from a short spec string (a CLI flag or a config value)."""

from __future__ import annotations

from typing import Any

from video_env.backends.llm.base import LLM
from video_env.backends.llm.openai_compatible import OpenAICompatibleLLM
from video_env.backends.llm.transformers_local import TransformersLLM
from video_env.backends.model_paths import missing_model_path
from video_env.errors import ConfigError

__all__ = ["CLIENT_OPTIONS", "check_local_path", "make_llm", "split_llm_spec", "with_llm_options"]

#: Options an OpenAI-compatible spec may carry after ``?``, and their types.
CLIENT_OPTIONS: dict[str, type] = {"timeout_s": float, "max_retries": int}


def split_llm_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"openai:gpt-4o-mini?timeout_s=30&max_retries=2"`` → the spec and its options.

    Raises:
        ConfigError: On an unknown option or a value of the wrong type.
    """
    base, _, query = spec.strip().partition("?")
    options: dict[str, Any] = {}
    for item in filter(None, query.split("&")):
        key, sep, value = item.partition("=")
        key = key.strip()
        if key not in CLIENT_OPTIONS or not sep:
            # the option's name only: its value may be a key put where none belongs
            known = ", ".join(f"{k}=..." for k in CLIENT_OPTIONS)
            raise ConfigError(
                f"LLM spec option {key[:40]!r} is not one of: {known} (its value is not "
                "shown; an API key goes in $VIDEO_ENV_LLM_API_KEY or $OPENAI_API_KEY)"
            )
        try:
            options[key] = CLIENT_OPTIONS[key](value.strip())
        except ValueError:
            kind = CLIENT_OPTIONS[key].__name__
            raise ConfigError(f"LLM spec option {key} must be a {kind}") from None
    return base, options


def with_llm_options(spec: str, **options: Any) -> str:
    """``spec`` with ``options`` (those not None) set after ``?`` (see :func:`make_llm`).

    Raises:
        ConfigError: On an unknown option.
    """
    base, current = split_llm_spec(spec)
    current.update({k: v for k, v in options.items() if v is not None})
    unknown = set(current) - set(CLIENT_OPTIONS)
    if unknown:
        raise ConfigError(f"unknown LLM client options {sorted(unknown)}")
    query = "&".join(f"{k}={current[k]:g}" if isinstance(current[k], float) else
                     f"{k}={current[k]}" for k in CLIENT_OPTIONS if k in current)  # fmt: skip
    return f"{base}?{query}" if query else base


def check_local_path(spec: str) -> None:
    """Fail at once when a ``local:`` spec names a path that is absent.

    A path starts with ``/``, ``.`` or ``~`` or holds more than one ``/`` (see
    :func:`~video_env.backends.model_paths.looks_like_path`); a Hub id never does.

    Cheap (nothing is loaded), so a benchmark checks it before its first episode.

    Raises:
        ConfigError: Naming the spec.
    """
    kind, _, rest = split_llm_spec(spec)[0].partition(":")
    if kind == "local" and missing_model_path(rest):
        raise ConfigError(f"LLM spec {split_llm_spec(spec)[0]!r}: no such folder")


def make_llm(spec: str | None, **options: Any) -> LLM | None:
    """The LLM a spec names, or None for none (offline policies).

    Specs: ``None`` or ``""`` → None; ``"openai:<model>"`` or a bare ``"<model>"`` (an
    Ollama tag such as ``llama3.2:3b`` included) → :class:`OpenAICompatibleLLM`, whose
    base URL and key come from the environment; ``"openai:"`` takes the model from
    ``$VIDEO_ENV_LLM_MODEL`` too; ``"local:<path or Hub name>"`` → :class:`TransformersLLM`.
    An OpenAI-compatible spec may end with client options,
    ``"openai:gpt-4o-mini?timeout_s=30&max_retries=2"`` (seconds per request, retries
    after the first attempt); keyword ``options`` override them.

    Args:
        spec: The spec.
        **options: Keyword arguments for the backend's constructor.

    Raises:
        ConfigError: On ``"local:"`` without a path, or a backend setting it rejects.
    """
    if spec is None or not spec.strip():
        return None
    spec, spec_options = split_llm_spec(spec)
    options = {**spec_options, **options}
    kind, sep, rest = spec.partition(":")
    if sep and kind == "local":
        if not rest:
            raise ConfigError("LLM spec 'local:' needs a model path or name")
        if spec_options:
            raise ConfigError("LLM client options (after '?') apply to OpenAI-compatible LLMs")
        check_local_path(spec)
        return TransformersLLM(rest, **options)
    if sep and kind == "openai":
        return OpenAICompatibleLLM(model=rest or None, **options)
    return OpenAICompatibleLLM(model=spec, **options)
