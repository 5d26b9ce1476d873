"""Generated blocks of the docs: text between an opening and a closing marker."""

from __future__ import annotations

from pathlib import Path


def replace_block(path: Path, begin: str, end: str, block: str) -> None:
    """Replace the text between the markers ``begin`` and ``end`` in ``path`` by ``block``.

    Raises:
        ValueError: If the markers are missing.
    """
    text = path.read_text(encoding="utf-8")
    if begin not in text or end not in text:
        raise ValueError(f"{path} has no {begin} ... {end} block")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{begin}\n{block}{end}{tail}", encoding="utf-8")
