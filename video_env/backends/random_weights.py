"""The marker of checkpoints with random weights, built by the tiny test-model builders.

:func:`~video_env.backends.testing.tiny_qwen2_5_vl` and
:func:`~video_env.backends.testing_clip.tiny_open_clip` write :data:`MARKER` into the folder
they save. A backend loaded from such a folder says so (``random_weights``), episodes
record it, and run headers, ``run.json`` and summaries label the results
:data:`LABEL`: they test the plumbing, not a model.
"""

from __future__ import annotations

import os

__all__ = ["LABEL", "MARKER", "has_random_weights"]

#: The file the builders write into a random-weights checkpoint folder.
MARKER = "tiny_model.json"
#: How results from such a checkpoint are labelled.
LABEL = "random weights (plumbing test)"


def has_random_weights(path: str | os.PathLike[str] | None) -> bool:
    """Whether ``path`` is a checkpoint folder the tiny test builders made."""
    if not path:  # None or "" (a spec without a folder, such as ``simulated``)
        return False
    folder = os.path.expanduser(os.fspath(path))
    return os.path.isfile(os.path.join(folder, MARKER))
