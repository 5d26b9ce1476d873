"""What a reply's text holds before it is read as a call: thoughts, tag blocks, blanks.

Every scan is linear in the reply's length: tags are matched through sorted positions,
never by re-scanning the text per opening tag, so a reply of many unclosed tags costs
what its length does.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from typing import Any

__all__ = [
    "MAX_BLOCK_CHARS",
    "clean_text",
    "is_blank",
    "tag_blocks",
    "text_outside",
    "without_think",
]

#: Longest text between a tag's opening and closing (a call's JSON, an answer).
MAX_BLOCK_CHARS = 16_384
_SURROGATE = re.compile("[\ud800-\udfff]")


def is_blank(text: str) -> bool:
    """Whether ``text`` shows nothing: only blanks, controls and zero-width characters."""
    return all(unicodedata.category(c)[0] in "CZ" for c in text)


def clean_text(value: Any) -> Any:
    """``value`` with lone surrogates in its text replaced by U+FFFD (lists, dicts too)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [clean_text(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k): clean_text(v) for k, v in value.items()}
    return value


def without_think(text: str) -> str:
    """``text`` without its ``<think>...</think>`` blocks (an unclosed one is kept).

    One pass over the tags' positions: each opening pairs with the first closing after it,
    so a reply of many unclosed ``<think>`` tags costs what its length does.
    """
    closes = [m.start() for m in re.finditer("</think>", text)]
    if not closes:
        return text
    kept, position = [], 0
    for m in re.finditer("<think>", text):
        if m.start() < position:
            continue
        i = bisect.bisect_left(closes, m.end())
        if i == len(closes):
            break
        kept.append(text[position : m.start()])
        position = closes[i] + len("</think>")
    kept.append(text[position:])
    return "".join(kept)


def tag_blocks(text: str, tags: tuple[str, ...]) -> list[tuple[str, int, int, str]]:
    """Complete ``<tag>body</tag>`` blocks, in text order, none inside another.

    Each closing tag pairs with the nearest opening of its tag before it, so an opening
    named in prose (``put it in the <answer> tag``) never swallows the call after it.
    Opening positions are collected once and found by bisection: one pass, however many
    unclosed tags a reply holds.
    """
    alternatives = "|".join(map(re.escape, tags))
    opens: dict[str, list[tuple[int, int]]] = {t: [] for t in tags}
    for m in re.finditer(f"<({alternatives})>", text):
        opens[m.group(1)].append((m.end(), m.start()))
    blocks: list[tuple[str, int, int, str]] = []
    done_until = 0
    for m in re.finditer(f"</({alternatives})>", text):
        tag, close = m.group(1), m.start()
        candidates = opens[tag]
        i = bisect.bisect_right(candidates, (close, close)) - 1
        if i < 0:
            continue
        body_start, start = candidates[i]
        if start < done_until or close - body_start > MAX_BLOCK_CHARS:
            continue
        blocks.append((tag, start, m.end(), text[body_start:close]))
        done_until = m.end()
    return blocks


def text_outside(text: str, blocks: list[tuple[str, int, int, str]]) -> str:
    """``text`` without the ``blocks`` (:func:`tag_blocks`' spans)."""
    bounds = [0] + [x for _, s, e, _ in blocks for x in (s, e)] + [len(text)]
    return "".join(text[a:b] for a, b in zip(bounds[::2], bounds[1::2], strict=True))
