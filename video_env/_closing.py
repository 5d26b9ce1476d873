"""A base for objects that end with ``close()``: used as ``with obj:`` they close on the way out."""

from __future__ import annotations

from types import TracebackType
from typing import TypeVar

__all__ = ["Closing"]

_T = TypeVar("_T", bound="Closing")


class Closing:
    """``with obj:`` gives ``obj`` and calls ``obj.close()`` when the block ends, errors too."""

    def close(self) -> None:
        """Release what the object holds (subclasses say what)."""
        raise NotImplementedError

    def __enter__(self: _T) -> _T:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
