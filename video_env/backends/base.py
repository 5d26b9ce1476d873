"""Backend protocols: VLM, captioner, CLIP and text embedder, with cost accounting.

Environments hold the perception backends they need; policies hold their LLM. Every
backend keeps a running :class:`~video_env.metrics.cost.Cost` in ``usage`` and says
whether it is ``simulated``, so results can always be labelled honestly.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from video_env._optional import require
from video_env.backends.llm.base import Completion
from video_env.metrics.cost import Cost
from video_env.types import Interval
from video_env.video.base import FrameArray, Size, VideoReader
from video_env.video.resize import Resize
from video_env.video.sampling import frame_size, uniform_times


@dataclass(frozen=True, eq=False)
class FrameBatch:
    """Frames a backend looks at: a video, timestamps and a size; pixels decoded lazily.

    Simulated backends never need the pixels; real ones call :meth:`pixels`.

    Attributes:
        video: The video the frames come from.
        times: Timestamps in seconds.
        size: Concrete frame size.
    """

    video: VideoReader
    times: npt.NDArray[np.float64]
    size: Size
    _pixels: list[FrameArray] = field(default_factory=list, repr=False)

    @classmethod
    def sample(
        cls,
        video: VideoReader,
        window: Interval,
        n_frames: int,
        resolution: int | tuple[int, int] | Resize | None = None,
    ) -> FrameBatch:
        """``n_frames`` uniform frames of ``window`` at ``resolution`` (see ``frame_size``)."""
        times = uniform_times(window, n_frames)
        return cls(video, times, frame_size(video.size, resolution))

    def __len__(self) -> int:
        return len(self.times)

    def pixels(self) -> FrameArray:
        """The frames as ``uint8[N, H, W, 3]`` (decoded once, then kept)."""
        if not self._pixels:
            size = Resize.exact(self.size.width, self.size.height)
            self._pixels.append(self.video.frames(self.times, size=size))
        return self._pixels[0]


@dataclass(frozen=True)
class Answer:
    """A VLM's answer to a question about frames.

    Attributes:
        text: The answer (an option letter for MCQs).
        confidence: Calibrated confidence in ``[0, 1]`` (FALCONEye: the option-letter
            probability for MCQs, the geometric mean of top-1 token probabilities else).
        token_probs: Top-1 probability of each generated token.
        n_visual_tokens: Visual tokens the call consumed.
    """

    text: str
    confidence: float
    token_probs: tuple[float, ...] = ()
    n_visual_tokens: int = 0


@runtime_checkable
class VLM(Protocol):
    """Answers questions about frames with a confidence."""

    name: str
    simulated: bool
    usage: Cost

    def answer(
        self, frames: FrameBatch, question: str, options: Sequence[str] | None = None
    ) -> Answer:
        """Answer ``question`` (with ``options`` for an MCQ) from ``frames``."""
        ...


#: Caption styles a :class:`Captioner` knows: FALCONEye's light captions, VideoAgent's.
CAPTION_STYLES = ("light", "detailed")


@runtime_checkable
class Captioner(Protocol):
    """Describes frames in a short caption."""

    name: str
    simulated: bool
    usage: Cost

    def caption(self, frames: FrameBatch, max_tokens: int = 64, style: str = "light") -> str:
        """A caption of ``frames`` (at most ``max_tokens`` tokens).

        ``style`` is ``"light"`` (FALCONEye's short clip caption, "15 words maximum") or
        ``"detailed"`` (VideoAgent's detailed frame caption); see :data:`CAPTION_STYLES`.
        """
        ...


@runtime_checkable
class CLIP(Protocol):
    """Image and text features in one space (rows L2-normalised)."""

    name: str
    simulated: bool
    usage: Cost

    def image_features(self, video: VideoReader, times: Sequence[float]) -> npt.NDArray[np.float32]:
        """Features of the frames at ``times``, ``float32[N, D]``."""
        ...

    def text_features(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Features of ``texts``, ``float32[M, D]``."""
        ...


VisionContent = str | Sequence["str | FrameBatch"]
"""A chat message's content: text, or text parts interleaved with frame batches."""

VisionMessage = dict[str, "str | VisionContent"]
"""A chat message with frames: ``{"role": "system" | "user" | "assistant", "content": ...}``."""


@dataclass(frozen=True)
class ReplyGuide:
    """Guided decoding of a reply: once ``after`` is written, only set paths follow.

    After the first ``after`` in the reply (from the start when ``after`` is empty), the
    text must go on with one of ``closed`` or a full match of one of ``patterns`` — after
    which the reply ends — or one of ``open`` — after which decoding is free again.
    Backends that take a guide (``accepts_guide``) mask the tokens that leave these paths;
    before ``after`` nothing is constrained. VideoScout's legal-action decoding uses it to
    keep a reply's action within the env's legal actions, and its format decoding to keep
    the whole reply in the Think-Act format.

    Patterns guide the whole reply: a guide with them has no ``after`` and no open heads.
    They are regular expressions in the common subset of the ``regex`` package (whose
    partial matching answers :meth:`state` and :meth:`allows` here) and of xgrammar, the
    grammar engine the transformers backend masks tokens with
    (:mod:`video_env.backends.hf_pattern_guide`): classes, groups, alternatives, bounded
    repeats; no look-arounds or backreferences. Whitespace right after a non-empty
    ``after`` is passed over; without one the reply's first character is already on a
    path (a model cannot spend its budget on blanks).

    Attributes:
        after: The text that starts the guided part.
        closed: Complete continuations (the reply ends after one).
        open: Continuations that are only prefixes (free decoding after one).
        patterns: Regular expressions of complete continuations (the reply ends after a
            full match, so each should end in a literal that no match can go past).
    """

    after: str
    closed: tuple[str, ...] = ()
    open: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.closed and not self.open and not self.patterns:
            raise ValueError("a ReplyGuide needs at least one continuation")
        if any(not head for head in (*self.closed, *self.open, *self.patterns)):
            raise ValueError("a ReplyGuide's continuations must not be empty")
        if self.patterns and (self.after or self.open):
            raise ValueError(
                "a ReplyGuide's patterns guide the whole reply: no after, no open heads"
            )
        for pattern in self.patterns:
            _compiled(pattern)  # a malformed pattern fails here, not mid-generation

    def state(self, reply: str) -> tuple[str, str | None]:
        """Where ``reply`` stands, and the text since ``after`` while guided.

        ``("free", None)`` before ``after`` or past an open head, ``("end", None)`` at the
        end of a closed head or a pattern's full match, else ``("guided", tail)``. The first
        ``after`` counts (as a parser reads the first closing tag).
        """
        at = reply.find(self.after)
        if at < 0:
            return "free", None
        tail = self._passed(reply[at + len(self.after) :])
        if any(tail.startswith(head) for head in self.closed) or self._completes(tail):
            return "end", None
        if any(tail.startswith(head) for head in self.open):
            return "free", None
        return "guided", tail

    def allows(self, tail: str) -> bool:
        """Whether ``tail`` (the text since ``after``) stays on a path to a continuation.

        That is a prefix of a closed head or of a pattern's match, or a prefix of an open
        head or text past one.
        """
        tail = self._passed(tail)
        return (
            any(h.startswith(tail) for h in self.closed)
            or any(h.startswith(tail) or tail.startswith(h) for h in self.open)
            or any(_compiled(p).fullmatch(tail, partial=True) for p in self.patterns)
        )

    def next_chars(self, tail: str) -> set[str] | None:
        """The characters that may follow ``tail`` on a path to an unfinished continuation.

        ``None`` (any character may) while the guide has patterns.
        """
        if self.patterns:
            return None
        tail = self._passed(tail)
        heads = (*self.closed, *self.open)
        return {h[len(tail)] for h in heads if h.startswith(tail) and len(h) > len(tail)}

    def _passed(self, tail: str) -> str:
        """``tail`` without the whitespace right after a non-empty ``after``."""
        return tail.lstrip() if self.after else tail

    def regex(self) -> str:
        """The one regular expression a guide with patterns keeps the whole reply to.

        Its closed heads (escaped) and patterns, as alternatives; what a grammar engine
        compiles (xgrammar here, a server's structured outputs).

        Raises:
            ValueError: For a guide without patterns (a marker's free text before it is
                not one regular expression here).
        """
        if not self.patterns:
            raise ValueError("only a guide with patterns is one regular expression")
        alternatives = [literal_pattern(head) for head in self.closed] + list(self.patterns)
        return "|".join(f"(?:{alternative})" for alternative in alternatives)

    def _completes(self, tail: str) -> bool:
        """Whether ``tail`` is a full match of a pattern."""
        for pattern in self.patterns:
            match = _compiled(pattern).fullmatch(tail, partial=True)
            if match is not None and not match.partial:
                return True
        return False


_META = re.compile(r"([\\.^$*+?{}\[\]|()])")


def literal_pattern(text: str) -> str:
    """``text`` as a :class:`ReplyGuide` pattern that matches it alone.

    Only the metacharacters are escaped (``re.escape`` also escapes blanks, ``#`` or
    ``~``, which xgrammar reads right but warns about), so the ``regex`` package and
    xgrammar read the result alike.
    """
    return _META.sub(r"\\\1", text)


def takes_guide(model: object, *, patterns: bool) -> bool:
    """Whether ``model``'s ``chat`` takes a :class:`ReplyGuide` of this kind.

    ``accepts_guide``: any guide (the transformers backend masks tokens itself);
    ``accepts_pattern_guide``: guides with patterns only (a server that takes one regular
    expression per request, :class:`~video_env.backends.openai_vlm.OpenAIVLM`).
    """
    if getattr(model, "accepts_guide", False):
        return True
    return patterns and bool(getattr(model, "accepts_pattern_guide", False))


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    """``pattern`` compiled by the ``regex`` package (partial matching; imported on use).

    Raises:
        BackendNotInstalled: Without ``regex`` (the ``models`` extra).
        ValueError: When ``pattern`` is not a regular expression.
    """
    regex = require("regex", "models", "reply patterns (guided decoding)")
    try:
        return regex.compile(pattern)
    except regex.error as err:
        raise ValueError(f"not a regular expression: {pattern!r} ({err})") from err


@runtime_checkable
class VisionChat(Protocol):
    """A VLM that continues a chat whose messages may carry frames (free-form generation).

    Policies that drive an env with a VLM (VideoScout) use this role; the same model
    usually also serves the :class:`VLM` and :class:`Captioner` roles. A call returns the
    LLM layer's :class:`~video_env.backends.llm.base.Completion` (text, token counts,
    per-token log-probabilities when available) and adds its cost to ``usage``.
    """

    name: str
    simulated: bool
    usage: Cost

    def chat(
        self,
        messages: Sequence[VisionMessage],
        *,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
    ) -> Completion:
        """The model's reply to ``messages`` (greedy when ``temperature`` is 0)."""
        ...


@runtime_checkable
class TextEmbedder(Protocol):
    """Sentence embeddings (rows L2-normalised)."""

    name: str

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embeddings of ``texts``, ``float32[N, D]``."""
        ...


def normalize_rows(x: npt.NDArray[np.floating]) -> npt.NDArray[np.float32]:
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    out: npt.NDArray[np.float32] = (x / np.where(norms == 0, 1, norms)).astype(np.float32)
    return out


#: Decimals kept in similarity scores that decisions are taken on (see :func:`similarities`).
SCORE_DECIMALS = 6


def similarities(
    rows: npt.NDArray[np.floating], query: npt.NDArray[np.floating]
) -> npt.NDArray[np.float64]:
    """Dot product of each row with ``query``, reproducibly, rounded to 6 decimals.

    Retrieval and ranking decisions take arg-maxes of these scores. A BLAS matrix product
    may sum in a different order depending on threads and memory layout, so identical
    rows (two frames with the same caption) could differ in the last bit and flip a tie
    between runs or executors. An element-wise product summed by numpy does not, and the
    rounding turns near-ties into exact ties broken by position.
    """
    products = np.asarray(rows, dtype=np.float64) * np.asarray(query, dtype=np.float64)
    scores: npt.NDArray[np.float64] = np.round(products.sum(axis=-1), SCORE_DECIMALS)
    return scores
