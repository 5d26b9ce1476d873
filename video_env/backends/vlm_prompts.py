"""The prompts real VLM backends send: FALCON-Bench's VQA prompts and FALCONEye's light caption.

Templates are package data (``video_env/backends/prompts/*.txt``, ``str.format``):

* ``vqa_mcq.txt`` / ``vqa_open.txt``: lmms-eval's FALCON-Bench task prompts
  (``FALCONbench_doc_to_text_mcq`` / ``_oq``: pre-prompt "Answer the following question
  based on the provided frames.", options as ``"A. text"`` lines, and for MCQs the
  post-prompt "Answer with the option's letter from the given choices directly").
* ``caption.txt``: FALCONEye's ``vlm_caption_prompt`` ("15 words maximum"), generated
  with at most 64 new tokens (``vlm_caption_max_new_tokens``): the ``"light"`` style.
* ``caption_detailed.txt``: the ``"detailed"`` style, for VideoAgent's frame captions
  (its released captions average about 74 words; the prompt that made them is not in
  ``wxh1996/VideoAgent``, so the wording is ours).

The reference generates VQA answers with at most 64 new tokens for MCQs and 128 for open
questions (the task YAMLs' ``max_new_tokens``); see :data:`ANSWER_MAX_TOKENS`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import cache
from importlib import resources

from video_env.backends.confidence import option_letters
from video_env.errors import ConfigError
from video_env.types import option_lines

__all__ = [
    "ANSWER_MAX_TOKENS",
    "CAPTION_MAX_TOKENS",
    "SYSTEM_PROMPT",
    "caption_prompt",
    "prompts_digest",
    "question_prompt",
    "system_message",
    "template",
]

#: Qwen2.5-VL's default system message, which lmms-eval's Qwen2.5-VL model sends.
SYSTEM_PROMPT = "You are a helpful assistant."
#: New-token caps of FALCON-Bench's VQA tasks: MCQ, open.
ANSWER_MAX_TOKENS = {"mcq": 64, "open": 128}
#: FALCONEye's ``vlm_caption_max_new_tokens``.
CAPTION_MAX_TOKENS = 64


@cache
def template(name: str) -> str:
    """The text of ``prompts/<name>.txt``."""
    return resources.files("video_env.backends").joinpath(f"prompts/{name}.txt").read_text("utf-8")


def question_prompt(question: str, options: Sequence[str] | None = None) -> str:
    """The VQA prompt for ``question`` (an MCQ when ``options`` are given)."""
    if options:
        option_letters(options)  # more than 26 options is a ConfigError
        return template("vqa_mcq").format(question=question, options=option_lines(options))
    return template("vqa_open").format(question=question)


def caption_prompt(style: str = "light") -> str:
    """The caption prompt of ``style``: FALCONEye's light caption, or a detailed one.

    Raises:
        ConfigError: For an unknown style.
    """
    if style == "light":
        return template("caption")
    if style == "detailed":
        return template("caption_detailed")
    raise ConfigError(f"caption style must be 'light' or 'detailed', got {style!r}")


def system_message() -> dict[str, str]:
    """The system message of every VLM request."""
    return {"role": "system", "content": SYSTEM_PROMPT}


def prompts_digest() -> str:
    """A short hash of every prompt text (for backend configs and cache keys)."""
    names = ("vqa_mcq", "vqa_open", "caption", "caption_detailed")
    texts = [SYSTEM_PROMPT, *(template(n) for n in names)]
    return hashlib.sha256("\x1e".join(texts).encode()).hexdigest()[:16]
