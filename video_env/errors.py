"""Typed error hierarchy of video-env.

Every error the library raises on purpose derives from :class:`VideoEnvError`, so a
benchmark loop can tell a failing episode (record it, go on) from a programming error.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any


class VideoEnvError(Exception):
    """Base class of every error raised on purpose by video-env.

    Errors pickle with their constructor arguments (subclasses take other arguments than
    the message), so they cross process boundaries intact: a benchmark worker's error
    reaches the parent as itself, not as a broken pool.
    """

    _init_args: tuple[tuple[Any, ...], dict[str, Any]]

    def __new__(cls, *args: Any, **kwargs: Any) -> VideoEnvError:
        """Remember the constructor's arguments, for pickling."""
        self = super().__new__(cls, *args)
        self._init_args = (args, kwargs)
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        args, kwargs = getattr(self, "_init_args", (self.args, {}))
        return (_rebuild, (type(self), args, kwargs, self.__dict__))


def _rebuild(
    cls: type[VideoEnvError], args: tuple[Any, ...], kwargs: dict[str, Any], state: dict[str, Any]
) -> VideoEnvError:
    error = cls(*args, **kwargs)
    error.__dict__.update(state)
    return error


class ConfigError(VideoEnvError, ValueError):
    """A setting or argument has a value the library cannot use."""


class UnknownNameError(VideoEnvError, KeyError):
    """A name (suite, dataset, backend, policy) is not registered.

    Args:
        kind: What was looked up, e.g. ``"suite"``.
        name: The name that was asked for.
        known: The names that exist.
    """

    def __init__(self, kind: str, name: str, known: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.known = sorted(known)
        super().__init__(f"unknown {kind} {name!r}; known: {', '.join(self.known) or '(none)'}")

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class VideoDecodeError(VideoEnvError):
    """A video file is missing, empty, corrupt or cannot be decoded.

    Args:
        path: The video file.
        reason: What the decoder said.
    """

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"cannot decode video {self.path!r}: {reason}")


class InvalidActionError(VideoEnvError, ValueError):
    """An action is malformed or not legal in the current state of an episode."""


class DatasetError(VideoEnvError, ValueError):
    """An annotation file or one of its records is malformed.

    Args:
        source: The annotation file.
        message: What is wrong.
        index: Index of the offending record, when one is to blame.
    """

    def __init__(self, source: str | Path, message: str, index: int | None = None) -> None:
        self.source = str(source)
        self.index = index
        where = f"{self.source}" if index is None else f"{self.source}, record {index}"
        super().__init__(f"{where}: {message}")


class BackendNotInstalled(VideoEnvError, ImportError):
    """An optional dependency is missing; the message names the extra to install.

    Args:
        package: The importable module that is missing.
        extra: The ``video-env`` extra that provides it.
        purpose: What the caller wanted the package for.
    """

    def __init__(self, package: str, extra: str, purpose: str = "") -> None:
        self.package = package
        self.extra = extra
        why = f" (needed for {purpose})" if purpose else ""
        super().__init__(
            f"{package!r} is not installed{why}; install it with: pip install 'video-env[{extra}]'"
        )


class BackendError(VideoEnvError):
    """A perception or language backend failed (server error, bad reply, timeout)."""


class ContextExceeded(VideoEnvError):
    """A policy's chat no longer fits its model's context.

    The episode runner ends the episode there without an answer (``ended_by``
    ``context_full``), not as a failure: TRL ends a rollout whose next tool result would
    not fit the same way.
    """
