"""Lazy imports of optional dependencies with an error that names the extra to install."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from video_env.errors import BackendNotInstalled


def require(module: str, extra: str, purpose: str = "") -> ModuleType:
    """Import an optional module or raise :class:`BackendNotInstalled`.

    Args:
        module: Dotted module name, e.g. ``"torch"``.
        extra: The ``video-env`` extra that installs it, e.g. ``"models"``.
        purpose: Shown in the error, e.g. ``"the Qwen2.5-VL backend"``.

    Returns:
        The imported module.

    Raises:
        BackendNotInstalled: If the module cannot be imported.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise BackendNotInstalled(module, extra, purpose) from exc


def is_available(module: str) -> bool:
    """Tell whether a module can be found without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
