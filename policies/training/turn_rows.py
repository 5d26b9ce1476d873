"""Reading and editing the rows of a distilled ``turns.jsonl`` (``train distill``'s output).

A row is TRL's conversational prompt-completion format: ``prompt`` a list of messages whose
content is a text or a list of parts (``{"type": "text", "text": ...}`` and image
placeholders), ``completion`` the assistant's reply. The augmentations of
the laboratory's VideoScout-pixel recipe (``experiments/videoscout_pixel``) read the
reply and edit the prompt's texts in place through these helpers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["row_reply", "text_slots"]


def row_reply(row: dict[str, Any]) -> str | None:
    """The row's reply (its last completion message's text), or ``None`` without one."""
    completion = row.get("completion") or []
    content = completion[-1].get("content") if completion else None
    return content if isinstance(content, str) else None


def text_slots(
    row: dict[str, Any], role: str | None = None
) -> Iterator[tuple[dict[str, Any], str]]:
    """Where the row's prompt keeps its texts: ``(holder, key)``, ``holder[key]`` a text.

    Args:
        row: A ``turns.jsonl`` row.
        role: Only the messages of this role (``None``: every message).
    """
    for message in row.get("prompt") or []:
        if role is not None and message.get("role") != role:
            continue
        content = message.get("content")
        if isinstance(content, str):
            yield message, "content"
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    yield part, "text"
