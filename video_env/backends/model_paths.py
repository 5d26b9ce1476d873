"""Model names that are paths: told apart from Hub ids, and a missing one named at once.

A Hugging Face id is ``name`` or ``org/name``. A model argument that starts with ``/``,
``.`` or ``~``, or holds more than one ``/`` (or the platform's own separator), is a path
instead: when nothing exists there, the loaders say so in one line before any Hub
function sees it (``huggingface_hub`` would otherwise reject it as a malformed repo id,
with a long traceback, or look it up).
"""

from __future__ import annotations

import os

__all__ = ["looks_like_path", "missing_model_path"]


def looks_like_path(target: str) -> bool:
    """Whether a model argument is a filesystem path rather than a Hub id or a name."""
    text = target.strip()
    if text.startswith(("/", ".", "~")) or text.count("/") > 1:
        return True
    return os.sep != "/" and os.sep in text


def missing_model_path(target: str) -> str | None:
    """The path ``target`` names when it is a path (see :func:`looks_like_path`) and absent.

    Returns:
        The path with ``~`` expanded, or ``None`` when ``target`` is no path or exists.
    """
    if not looks_like_path(target):
        return None
    path = os.path.expanduser(target.strip())
    return None if os.path.exists(path) else path
