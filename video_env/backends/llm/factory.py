"""Build an LLM backend from a short spec string (a CLI flag or a config value)."""

from __future__ import annotations

from typing import Any

from video_env.backends.llm.base import LLM
from video_env.backends.llm.openai_compatible import OpenAICompatibleLLM
from video_env.backends.llm.transformers_local import TransformersLLM
from video_env.errors import ConfigError

__all__ = ["make_llm"]


def make_llm(spec: str | None, **options: Any) -> LLM | None:
    """The LLM a spec names, or None for none (offline policies).

    Specs: ``None`` or ``""`` → None; ``"openai:<model>"`` or a bare ``"<model>"`` (an
    Ollama tag such as ``llama3.2:3b`` included) → :class:`OpenAICompatibleLLM`, whose
    base URL and key come from the environment; ``"openai:"`` takes the model from
    ``$VIDEO_ENV_LLM_MODEL`` too; ``"local:<path or Hub name>"`` → :class:`TransformersLLM`.

    Args:
        spec: The spec.
        **options: Keyword arguments for the backend's constructor.

    Raises:
        ConfigError: On ``"local:"`` without a path, or a backend setting it rejects.
    """
    if spec is None or not spec.strip():
        return None
    spec = spec.strip()
    kind, sep, rest = spec.partition(":")
    if sep and kind == "local":
        if not rest:
            raise ConfigError("LLM spec 'local:' needs a model path or name")
        return TransformersLLM(rest, **options)
    if sep and kind == "openai":
        return OpenAICompatibleLLM(model=rest or None, **options)
    return OpenAICompatibleLLM(model=spec, **options)
