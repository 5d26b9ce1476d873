"""Generated blocks of the docs and the logs, found by their markers wherever they are.

A study writes its block between an opening and a closing marker. The block may sit in a
page of ``docs/``, in the README or in an experiment's ``LOG.md``: the study finds it by
its markers, so a page can be rewritten (a run-by-run table moved to a log) without
touching the study.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.doc_blocks import replace_block

ROOT = Path(__file__).resolve().parents[1]


def documents() -> list[Path]:
    """The README, every page of ``docs/`` and every Markdown file of the laboratory."""
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "experiments").rglob("*.md")),
    ]


def block_file(begin: str, end: str) -> Path:
    """The one document holding the block ``begin`` ... ``end``.

    Raises:
        ValueError: If no document or more than one holds it.
    """
    found = [p for p in documents() if _holds(p, begin, end)]
    if len(found) != 1:
        where = ", ".join(str(p.relative_to(ROOT)) for p in found) or "no document"
        raise ValueError(f"the block {begin} ... {end} must be in one document: {where}")
    return found[0]


def block_text(begin: str, end: str) -> str:
    """The text of the block ``begin`` ... ``end`` as committed (between its markers)."""
    text = block_file(begin, end).read_text(encoding="utf-8")
    return text.split(begin, 1)[1].split(end, 1)[0]


def update_block(begin: str, end: str, block: str) -> Path:
    """Write ``block`` between the markers, in the document that holds them; returns it."""
    path = block_file(begin, end)
    replace_block(path, begin, end, block)
    return path


def _holds(path: Path, begin: str, end: str) -> bool:
    text = path.read_text(encoding="utf-8")
    return begin in text and end in text
