"""The ClipQuery env's spaces and its dict actions."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from video_env.actions.types import QueryAction, SegmentQuery
from video_env.envs.spaces import (
    ERROR_CHARS,
    MAX_SECONDS,
    QUESTION_CHARS,
    CompactTuple,
    fraction_window_space,
    text_space,
    window_space,
)
from video_env.errors import InvalidActionError

#: Characters kept of the question and options, an error, a caption, a query's text.
CAPTION_CHARS, QUERY_CHARS = 1024, 256


class UniformMultiDiscrete(spaces.MultiDiscrete[np.int64]):
    """A :class:`~gymnasium.spaces.MultiDiscrete` of equal parts, printed in one short line."""

    def __repr__(self) -> str:
        nvec, start = np.unique(self.nvec), np.unique(self.start)
        if len(nvec) == len(start) == 1:
            return f"MultiDiscrete({self.nvec.size} x {nvec[0]}, start={start[0]})"
        return str(super().__repr__())  # type: ignore[no-untyped-call]


def action_space(max_segments: int, max_queries: int) -> spaces.Dict:
    """The dict action space: query (segments, texts, ``n_queries``) or answer."""
    q = max_queries
    return spaces.Dict(
        {
            "kind": spaces.Discrete(2),
            "segments": UniformMultiDiscrete([max_segments] * q, start=[1] * q),
            "texts": CompactTuple([text_space(QUERY_CHARS)] * q),
            "n_queries": spaces.Discrete(q + 1),
            "answer": text_space(256),
            "has_window": spaces.Discrete(2),
            "window": fraction_window_space(),
        }
    )


def observation_space(max_rounds: int, max_frames: int) -> spaces.Dict:
    """The ``-v0`` observation space (the env adds the later versions' fields)."""
    frame = spaces.Dict(
        {
            "time": spaces.Box(0.0, MAX_SECONDS, (1,), np.float32),
            "caption": text_space(CAPTION_CHARS),
        }
    )
    segment = spaces.Dict({"window": window_space()})
    return spaces.Dict(
        {
            "question": text_space(QUESTION_CHARS),
            "options": text_space(QUESTION_CHARS),
            "frames": spaces.Sequence(frame, stack=False),
            "segments": spaces.Sequence(segment, stack=False),
            "rounds_left": spaces.Box(0, max_rounds, (1,), np.int64),
            "frames_left": spaces.Box(0, max_frames, (1,), np.int64),
            "duration": spaces.Box(0.0, MAX_SECONDS, (1,), np.float32),
            "turn": spaces.Box(0, np.iinfo(np.int64).max, (1,), np.int64),
            "last_action_error": text_space(ERROR_CHARS),
        }
    )


def query_from_dict(action: dict[str, Any], max_queries: int) -> QueryAction:
    """The :class:`QueryAction` of a dict action of kind 0.

    Raises:
        TypeError: If ``texts`` is not a tuple of strings.
        InvalidActionError: If ``n_queries`` exceeds the space's (not the arrays') bound.
    """
    n = int(action["n_queries"])
    segments = np.asarray(action["segments"]).reshape(-1)
    texts = action["texts"]
    if not isinstance(texts, (tuple, list)) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a tuple of str")
    most = min(len(segments), len(texts), max_queries)
    if not 0 <= n <= most:  # bounded by the space, not by the arrays sent
        raise InvalidActionError(f"n_queries must be between 1 and {most}, got {n}")
    return QueryAction(tuple(SegmentQuery(int(segments[i]), texts[i]) for i in range(n)))
