"""Local files only: the library never downloads model weights (no surprise downloads).

``transformers`` and ``sentence-transformers`` are called with ``local_files_only=True``.
open_clip has no such option, so :func:`local_files_only` makes it (and anything else
that goes through ``huggingface_hub``) serve the local cache only while a model loads:
``huggingface_hub``'s offline flag is set, and open_clip's URL downloader is replaced by
one that returns the cached file or fails at once. A miss is therefore immediate, with
or without ``HF_HUB_OFFLINE`` in the shell.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

_LOCK = threading.RLock()


class NotCachedError(FileNotFoundError):
    """A model file is not on this machine, and the library does not download it."""


def _cached_url_only(url: str, cache_dir: str | None = None, *_: Any, **__: Any) -> str:
    """open_clip's ``download_pretrained_from_url``, without the download."""
    target = os.path.join(cache_dir or os.path.expanduser("~/.cache/clip"), os.path.basename(url))
    if os.path.isfile(target):
        return target
    raise NotCachedError(
        f"{os.path.basename(url)} is not in the local cache ({target}); video-env loads "
        "local files only and never downloads"
    )


@contextlib.contextmanager
def local_files_only() -> Iterator[None]:
    """Within the block, ``huggingface_hub`` and open_clip read local files only."""
    with _LOCK:
        constants = _hub_constants()
        saved_flag = getattr(constants, "HF_HUB_OFFLINE", None)
        pretrained: Any = sys.modules.get("open_clip.pretrained")
        saved_download = getattr(pretrained, "download_pretrained_from_url", None)
        if constants is not None:
            constants.HF_HUB_OFFLINE = True
        if pretrained is not None and saved_download is not None:
            pretrained.download_pretrained_from_url = _cached_url_only
        try:
            yield
        finally:
            if constants is not None:
                constants.HF_HUB_OFFLINE = saved_flag
            if pretrained is not None and saved_download is not None:
                pretrained.download_pretrained_from_url = saved_download


def _hub_constants() -> Any:
    try:
        import huggingface_hub.constants as constants
    except ImportError:  # no hub client installed: nothing can download through it
        return None
    return constants
