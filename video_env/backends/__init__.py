"""Model backends behind small protocols: VLM, captioner, CLIP, text embedder.

Simulated implementations (the offline default) live in
:mod:`video_env.backends.simulated`; real ones are imported lazily and name the extra to
install when it is missing.
"""

from video_env.backends.base import (
    CLIP,
    VLM,
    Answer,
    Captioner,
    FrameBatch,
    TextEmbedder,
    normalize_rows,
)
from video_env.backends.text import (
    LexicalEmbedder,
    MiniLMEmbedder,
    default_text_embedder,
    resolve_text_embedder,
    use_text_embedder,
)

__all__ = [
    "CLIP",
    "VLM",
    "Answer",
    "Captioner",
    "FrameBatch",
    "LexicalEmbedder",
    "MiniLMEmbedder",
    "TextEmbedder",
    "default_text_embedder",
    "normalize_rows",
    "resolve_text_embedder",
    "use_text_embedder",
]
