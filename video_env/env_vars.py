"""Every environment variable video-env reads: each documented once, and read here only.

A setting that may come from the environment is one :class:`EnvVar` below; the modules
that use it call :meth:`EnvVar.get` (or :func:`first_set` for a list of fallbacks), so
``git grep os.environ`` finds the reads in this module alone and ``video-env info``-style
listings can print :data:`VARIABLES`. Arguments always win over the environment; a
variable left unset (or set to the empty string) falls back to the argument's default.

| variable | what it sets |
|---|---|
| ``VIDEO_ENV_CACHE`` | ``off``, ``0`` or ``false`` turn the disk cache of model outputs off |
| ``VIDEO_ENV_CACHE_DIR`` | the cache's folder (default ``$XDG_CACHE_HOME/video-env``) |
| ``VIDEO_ENV_CACHE_SIZE_GB`` | the cache's size cap in GB (default 8) |
| ``VIDEO_ENV_DECODER`` | the video decoder: ``torchcodec``, ``decord`` or ``pyav`` |
| ``VIDEO_ENV_MAX_FRAME_PIXELS`` | the largest frame a video may have (pixels, or ``WxH``) |
| ``VIDEO_ENV_TEXT_EMBEDDER`` | the text embedder when none is named (``lexical``, ``minilm``) |
| ``VIDEO_ENV_LLM_MODEL`` | the LLM model when none is named |
| ``VIDEO_ENV_LLM_BASE_URL`` | an OpenAI-compatible LLM server (then ``OPENAI_BASE_URL``) |
| ``VIDEO_ENV_LLM_API_KEY`` | the LLM's API key (then ``OPENAI_API_KEY``); never logged |
| ``VIDEO_ENV_VLM_BASE_URL`` | an OpenAI-compatible VLM server for ``--vlm openai:MODEL`` |
| ``VIDEO_ENV_VLM_REGEX_FIELD`` | the request field where that server reads a reply pattern |
| ``VIDEO_ENV_TORCH_THREADS`` | torch threads of the transformers backends: ``auto`` or a count |
| ``VIDEO_ENV_SERVE_TOKEN`` | the bearer token of ``video-env serve`` and its clients |
| ``OPENENV_MODE`` | OpenEnv's server mode (default ``simulation``) |
| ``XDG_CACHE_HOME`` | where user caches live (default ``~/.cache``) |
| ``PMI_SIZE``, ``OMPI_COMM_WORLD_SIZE`` | the processes a launcher started (MPI's) |
| ``MV2_COMM_WORLD_SIZE``, ``WORLD_SIZE`` | the same (MVAPICH's; torchrun's, accelerate's) |
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = [
    "CACHE",
    "CACHE_DIR",
    "CACHE_SIZE_GB",
    "DECODER",
    "LLM_API_KEYS",
    "LLM_BASE_URLS",
    "LLM_MODEL",
    "MAX_FRAME_PIXELS",
    "OPENENV_MODE",
    "SERVE_TOKEN",
    "TEXT_EMBEDDER",
    "TORCH_THREADS",
    "VARIABLES",
    "VLM_BASE_URL",
    "VLM_REGEX_FIELD",
    "WORLD_SIZES",
    "XDG_CACHE_HOME",
    "EnvVar",
    "first_set",
    "read",
]


@dataclass(frozen=True)
class EnvVar:
    """An environment variable video-env reads.

    Attributes:
        name: The variable's name.
        purpose: What it sets, in a line.
    """

    name: str
    purpose: str

    def get(self) -> str | None:
        """Its value, or ``None`` when it is unset or empty (surrounding spaces kept)."""
        return os.environ.get(self.name) or None


def first_set(variables: tuple[EnvVar, ...]) -> tuple[EnvVar, str] | None:
    """The first of ``variables`` set to a non-blank value, and that value stripped."""
    for variable in variables:
        value = (variable.get() or "").strip()
        if value:
            return variable, value
    return None


CACHE = EnvVar("VIDEO_ENV_CACHE", "off, 0 or false turn the disk cache off")
CACHE_DIR = EnvVar("VIDEO_ENV_CACHE_DIR", "the disk cache's folder")
CACHE_SIZE_GB = EnvVar("VIDEO_ENV_CACHE_SIZE_GB", "the disk cache's size cap in GB")
XDG_CACHE_HOME = EnvVar("XDG_CACHE_HOME", "where user caches live")
DECODER = EnvVar("VIDEO_ENV_DECODER", "the video decoder: torchcodec, decord or pyav")
MAX_FRAME_PIXELS = EnvVar("VIDEO_ENV_MAX_FRAME_PIXELS", "the largest frame a video may have")
TEXT_EMBEDDER = EnvVar("VIDEO_ENV_TEXT_EMBEDDER", "the text embedder when none is named")
LLM_MODEL = EnvVar("VIDEO_ENV_LLM_MODEL", "the LLM model when none is named")
LLM_BASE_URLS = (
    EnvVar("VIDEO_ENV_LLM_BASE_URL", "an OpenAI-compatible LLM server"),
    EnvVar("OPENAI_BASE_URL", "an OpenAI-compatible LLM server (the OpenAI SDK's name)"),
)
LLM_API_KEYS = (
    EnvVar("VIDEO_ENV_LLM_API_KEY", "the LLM's API key"),
    EnvVar("OPENAI_API_KEY", "the LLM's API key (the OpenAI SDK's name)"),
)
VLM_BASE_URL = EnvVar("VIDEO_ENV_VLM_BASE_URL", "an OpenAI-compatible VLM server")
VLM_REGEX_FIELD = EnvVar("VIDEO_ENV_VLM_REGEX_FIELD", "where that server reads a reply pattern")
TORCH_THREADS = EnvVar("VIDEO_ENV_TORCH_THREADS", "torch threads: auto or a count")
SERVE_TOKEN = EnvVar("VIDEO_ENV_SERVE_TOKEN", "the bearer token of video-env serve")
OPENENV_MODE = EnvVar("OPENENV_MODE", "OpenEnv's server mode")
#: Where launchers put the number of processes, in accelerate's order (MPI's, then
#: torchrun's and accelerate's own).
WORLD_SIZES = tuple(
    EnvVar(name, "the processes a launcher started")
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "WORLD_SIZE")
)

#: Every variable, for listings and the test that no other module reads one.
VARIABLES: tuple[EnvVar, ...] = (
    CACHE,
    CACHE_DIR,
    CACHE_SIZE_GB,
    XDG_CACHE_HOME,
    DECODER,
    MAX_FRAME_PIXELS,
    TEXT_EMBEDDER,
    LLM_MODEL,
    *LLM_BASE_URLS,
    *LLM_API_KEYS,
    VLM_BASE_URL,
    VLM_REGEX_FIELD,
    TORCH_THREADS,
    SERVE_TOKEN,
    OPENENV_MODE,
    *WORLD_SIZES,
)


def read(name: str) -> str | None:
    """The value of a variable named at run time, or ``None`` when unset or empty.

    For a variable an argument chooses (``OpenAIVLM(api_key_env=...)``, an API key's).
    """
    return os.environ.get(name) or None
