"""Language-model backends for prompted policies (see :class:`LLM`).

:class:`OpenAICompatibleLLM` talks to OpenAI, vLLM, SGLang, Ollama or a llama.cpp server
(``llm`` extra); :class:`TransformersLLM` runs a local causal LM (``models`` extra);
:func:`make_llm` builds either from a spec string. :func:`parse_json_reply` gets JSON out
of a model's reply, repairing it where it can. Optional packages are imported only when
a backend is built, and a missing one names the extra to install.
"""

from video_env.backends.llm.base import LLM, Completion, Message, estimate_tokens
from video_env.backends.llm.config import OpenAISettings, resolve_openai_settings
from video_env.backends.llm.factory import make_llm
from video_env.backends.llm.failures import LLMCallError
from video_env.backends.llm.json_reply import ReplyFormatError, parse_json_object, parse_json_reply
from video_env.backends.llm.openai_compatible import OpenAICompatibleLLM
from video_env.backends.llm.pricing import DEFAULT_PRICES, PriceTable, lookup_price, price
from video_env.backends.llm.transformers_local import TransformersLLM

__all__ = [
    "DEFAULT_PRICES",
    "LLM",
    "Completion",
    "LLMCallError",
    "Message",
    "OpenAICompatibleLLM",
    "OpenAISettings",
    "PriceTable",
    "ReplyFormatError",
    "TransformersLLM",
    "estimate_tokens",
    "lookup_price",
    "make_llm",
    "parse_json_object",
    "parse_json_reply",
    "price",
    "resolve_openai_settings",
]
