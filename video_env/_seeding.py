"""Stable seeds derived from arbitrary values (independent of Python's hash salt)."""

from __future__ import annotations

import hashlib


def stable_seed(*parts: object) -> int:
    """A 64-bit integer that depends only on the string forms of ``parts``."""
    digest = hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")
