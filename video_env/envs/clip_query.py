"""The ClipQuery environment: VideoAgent's CLIP-retrieval search over a long video."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from video_env.actions.clip_query import ClipQueryActionSet
from video_env.actions.types import Action, AnswerAction, QueryAction, SegmentQuery
from video_env.backends.base import (
    CAPTION_STYLES,
    CLIP,
    Captioner,
    FrameBatch,
    similarities,
)
from video_env.envs.arguments import EnvArguments
from video_env.envs.base import VideoQAEnv
from video_env.envs.clip_query_rules import (
    CAPTION_TOKENS,
    EDGE_EPS,
    INITIAL_PLACEMENTS,
    candidate_times,
    check_query_types,
    check_round,
    check_settings,
    grid_frames,
    released_initial_times,
    segments_between,
)
from video_env.envs.clip_query_spaces import (
    CAPTION_CHARS,
    action_space,
    observation_space,
    query_from_dict,
)
from video_env.envs.observation_text import clip_query_text
from video_env.envs.spaces import (
    clean_text,
    scalar,
    window_array,
)
from video_env.errors import ConfigError, InvalidActionError
from video_env.types import Interval, VideoQA
from video_env.video.sampling import frame_size, uniform_times

if TYPE_CHECKING:
    from typing_extensions import Unpack


class ClipQueryEnv(VideoQAEnv):
    """VideoAgent's iterative frame search: CLIP retrieval inside segments, captions.

    ## Description
    The agent reads captions of the frames seen so far and asks, in rounds, for more
    frames: each query names a segment (a gap between two consecutive seen frames) and a
    description; CLIP picks the unseen frame of the segment that best matches the
    description, the captioner describes it, and it joins the seen frames (kept sorted by
    time). The agent answers when it is confident enough.

    ## Action Space
    ``Dict(kind: Discrete(2) [0 query, 1 answer], segments:
    MultiDiscrete([max_segments] * Q, start=1), texts: Tuple(Text * Q), n_queries:
    Discrete(Q + 1), answer: Text, has_window: Discrete(2), window: Box(2) in fractions
    of the duration)`` with
    ``Q = max_queries_per_round`` (``max_frames - initial_frames`` when it is ``None``;
    the first ``n_queries`` pairs form the round; 0 is
    invalid); or the dataclasses ``QueryAction`` (a tuple of ``SegmentQuery(segment,
    text)``) and ``AnswerAction`` of :mod:`video_env.actions`; LLM text goes through
    :class:`~video_env.actions.ClipQueryActionSet`. Segment numbers are 1-based and refer
    to the segments shown before the round. A query is invalid (and the whole round with
    it: nothing is retrieved) when its segment does not exist, its description is empty,
    its segment has no unseen candidate left, the round has more queries than the cap
    (``max_queries_per_round``, or the number of segments shown when it is ``None``) or
    would exceed the frame budget.

    ## Observation Space
    ``question``, ``options`` (``"A. ...`` lines, empty for open questions), ``frames``
    (``Sequence(Dict(time: float32[1], caption: Text))``, a tuple sorted by time),
    ``segments`` (``Sequence(Dict(window: float32[2]))``: with seen times
    ``t1 < ... < tn``, the segments ``[0, t1], [t1, t2], ..., [tn, duration]`` in this
    order, numbered from 1, where the edge segments are left out when the video's first
    frame (``t1 = 0``) or its last frame on the candidate grid is seen: with the default
    placement the 5 initial frames give 4 segments, as in VideoAgent), ``rounds_left``
    (retrieval rounds), ``frames_left``, ``duration`` (seconds),
    ``turn``, ``last_action_error``.

    ## Rewards
    On answering: ``acc`` (1 if correct) + ``gtou`` (``gtou_weight`` x GToU of the given
    window; no window scores 0) + ``cost`` (``-call_cost`` x caption calls of the
    episode). An invalid action gives ``-invalid_action_penalty``.

    ## Starting State
    ``initial_frames`` frames, each captioned on its own, placed as VideoAgent's released
    ``main.py`` does (``initial_placement="released"``: ``np.linspace`` over the frames of
    the 1 fps grid, truncated to integers, so both ends are seen and
    ``initial_frames - 1`` segments lie between them) or at the centres of equal bins
    (``"centres"``: ``initial_frames + 1`` segments, edges included); ``max_rounds``
    retrieval rounds left.

    ## Episode End
    Terminated by ``answer``; truncated after more than ``max_invalid_actions`` invalid
    actions. When the retrieval rounds or the frame budget are spent (or no segment has an
    unseen candidate), only ``answer`` is legal: with the default 2 rounds the agent
    predicts on the initial frames, retrieves at most twice and answers (VideoAgent's 3
    rounds). Wrap with ``TimeLimit`` for a turn limit.

    ## Information
    ``sample_id, turn, last_action_error, invalid_actions, legal_actions, simulated,
    step_cost, retrieved`` (this step's retrievals: ``segment, text, time, score``),
    ``max_queries`` (the cap on the next round's queries); on
    the last step ``episode``: ``answer, correct, score, window, gtou, iou, reward,
    reward_parts (acc, gtou, cost), turns, frames, frames_shown, vlm_calls,
    caption_calls, clip_calls, visual_tokens, invalid_actions, ended_by, simulated,
    explored, trajectory``.

    ## Arguments
    ``dataset``, ``perception``, ``vlm``, ``captioner``, ``clip``, ``judge``,
    ``max_invalid_actions``,
    ``invalid_action_penalty``, ``standin_missing_videos``, ``render_mode`` (see
    :class:`~video_env.envs.base.VideoQAEnv`); ``initial_frames`` (5),
    ``initial_placement`` (``"released"`` or ``"centres"``), ``max_rounds`` (2 retrieval
    rounds), ``max_frames`` (32 seen frames in all, the initial ones included),
    ``max_queries_per_round`` (``None``: the number of segments shown), ``max_segments``
    (bound of the segment action, 64), ``candidate_fps`` (retrieval grid, 1 fps as
    VideoAgent), ``caption_resolution`` (448: frames fit inside 448 x 448 for captions),
    ``caption_style`` (``"detailed"``: VideoAgent's detailed frame captions;
    ``"light"``: FALCONEye's 15-word light captions), ``caption_max_tokens`` (``None``:
    192 for detailed captions, 64 for light ones),
    ``gtou_weight`` (0.5), ``call_cost`` (0.0).

    ## Version History
    * v1: ``option_list`` in the observation, the options as a sequence of texts without
      letters (option ``i`` is letter ``i``).
    * v0 (``observation_version=0``): initial release; captions default to VideoAgent's
      detailed style (FALCONEye's light captions are
      ``caption_style="light"``).
    """

    kind = "clip_query"

    def __init__(
        self,
        dataset: Sequence[VideoQA] | str | None = None,
        *,
        initial_frames: int = 5,
        initial_placement: str = "released",
        max_rounds: int = 2,
        max_frames: int = 32,
        max_queries_per_round: int | None = None,
        max_segments: int = 64,
        candidate_fps: float = 1.0,
        caption_resolution: int = 448,
        caption_style: str = "detailed",
        caption_max_tokens: int | None = None,
        gtou_weight: float = 0.5,
        call_cost: float = 0.0,
        **common: Unpack[EnvArguments],
    ) -> None:
        super().__init__(dataset, **common)
        check_settings(initial_frames, max_rounds, max_frames, max_queries_per_round, max_segments)
        if caption_style not in CAPTION_STYLES:
            raise ConfigError(f"caption_style must be one of {CAPTION_STYLES}")
        if caption_max_tokens is None:
            caption_max_tokens = CAPTION_TOKENS[caption_style]
        if not candidate_fps > 0 or caption_resolution < 1 or caption_max_tokens < 1:
            raise ConfigError("candidate_fps, caption_resolution, caption_max_tokens must be > 0")
        if initial_placement not in INITIAL_PLACEMENTS:
            raise ConfigError(
                f"initial_placement must be one of {INITIAL_PLACEMENTS}, got {initial_placement!r}"
            )
        self.initial_placement = initial_placement
        self.perception = self.perception.for_roles("captioner", "clip")
        self.initial_frames = initial_frames
        self.max_rounds = max_rounds
        self.max_frames = max_frames
        self.max_queries_per_round = max_queries_per_round
        self.max_segments = max_segments
        self.candidate_fps = candidate_fps
        self.caption_resolution = caption_resolution
        self.caption_style = caption_style
        self.caption_max_tokens = caption_max_tokens
        self.gtou_weight = gtou_weight
        self.call_cost = call_cost
        self.action_space = self._make_action_space()
        self.observation_space = self._versioned_space(self._make_observation_space())

    # -- spaces ----------------------------------------------------------------------

    def _make_action_space(self) -> spaces.Dict:
        q = self.max_queries_per_round or max(1, self.max_frames - self.initial_frames)
        self._dict_queries = q
        return action_space(self.max_segments, q)

    def _make_observation_space(self) -> spaces.Dict:
        return observation_space(self.max_rounds, self.max_frames)

    # -- episode ---------------------------------------------------------------------

    def _begin(self, sample: VideoQA) -> None:
        self.times: list[float] = []
        self.captions: list[str] = []
        self.rounds_used = 0
        self.caption_calls = 0
        self.retrieved: list[dict[str, Any]] = []
        self.last_retrieved: float | None = None
        self.caption_size = frame_size(self.video.size, self.caption_resolution)
        for t in self._initial_times():
            self._see(float(t))
        self.segments = self._segments()

    def _initial_times(self) -> npt.NDArray[np.float64]:
        duration = self.video.duration
        if self.initial_placement == "centres":
            return uniform_times(Interval(0.0, duration), self.initial_frames)
        return released_initial_times(duration, self.initial_frames, self.candidate_fps)

    def _segments(self) -> list[Interval]:
        last = (grid_frames(self.video.duration, self.candidate_fps) - 1) / self.candidate_fps
        return segments_between(self.times, self.video.duration, last)

    @property
    def max_queries(self) -> int:
        """Queries the next round may hold (the cap, or the number of segments shown)."""
        shown = len(getattr(self, "segments", ()))
        return self.max_queries_per_round or max(1, shown)

    def _see(self, t: float) -> None:
        """Caption the frame at ``t`` and insert it among the seen frames."""
        batch = FrameBatch(self.video, np.array([t]), self.caption_size)
        style = {} if self.caption_style == "light" else {"style": self.caption_style}
        caption = self._captioner().caption(batch, max_tokens=self.caption_max_tokens, **style)
        self.caption_calls += 1
        i = bisect.bisect(self.times, t)
        self.times.insert(i, t)
        self.captions.insert(i, caption)
        episode = self._require_episode_or_done()
        episode.explore(Interval(t, t), "frame")
        episode.frames_shown += 1
        self._last_times = np.array(self.times)

    @property
    def rounds_left(self) -> int:
        """Query rounds still allowed."""
        return self.max_rounds - self.rounds_used

    @property
    def frames_left(self) -> int:
        """Frames the budget still allows."""
        return self.max_frames - len(self.times)

    # -- actions ---------------------------------------------------------------------

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Apply an action (see the class docstring); ``info["retrieved"]`` lists its frames."""
        self.retrieved = []
        return super().step(action)

    def _coerce(self, action: Any) -> Action:
        if isinstance(action, QueryAction):
            check_query_types(action)
            return action
        if isinstance(action, AnswerAction):
            if not isinstance(action.text, str):
                raise TypeError(f"answer text must be a str, got {type(action.text).__name__}")
            return action
        if not isinstance(action, dict):
            raise TypeError(
                f"ClipQuery actions are QueryAction, AnswerAction or an action_space dict, "
                f"got {type(action).__name__}"
            )
        kind = int(action["kind"])
        if kind == 0:
            return self._query_from_dict(action)
        if kind != 1:
            raise InvalidActionError(f"kind must be 0 (query) or 1 (answer), got {kind}")
        return self._answer_from_dict(action)

    def _query_from_dict(self, action: dict[str, Any]) -> QueryAction:
        return query_from_dict(action, self._dict_queries)

    def _act(self, action: Action) -> float:
        if not isinstance(action, QueryAction):
            raise TypeError(f"not a ClipQuery action: {action!r}")
        if "query" not in self._legal_kinds():
            raise InvalidActionError(
                f"no query possible ({self.rounds_left} round(s), {self.frames_left} frame(s) "
                "left, or no unseen frame): only answer is legal"
            )
        check_round(action, self.segments, self.candidate_fps, self.max_queries, self.frames_left)
        shown = list(self.segments)
        texts = self._clip().text_features([q.text for q in action.queries])
        for query, text_feature in zip(action.queries, texts, strict=True):
            self._retrieve(query, shown[query.segment - 1], text_feature)
        self.rounds_used += 1
        self.segments = self._segments()
        return 0.0

    def _retrieve(
        self, query: SegmentQuery, segment: Interval, text_feature: npt.NDArray[np.float32]
    ) -> None:
        """See the unseen frame of ``segment`` that best matches the query's text."""
        candidates = candidate_times(segment, self.candidate_fps)
        seen = np.array(self.times)
        unseen = ~np.isclose(candidates[:, None], seen[None, :], rtol=0, atol=EDGE_EPS).any(1)
        candidates = candidates[unseen]
        scores = similarities(
            self._clip().image_features(self.video, candidates.tolist()), text_feature
        )
        best = int(np.argmax(scores))
        t = float(candidates[best])
        self._see(t)
        self.last_retrieved = t
        self.retrieved.append(
            {"segment": query.segment, "text": query.text, "time": t, "score": float(scores[best])}
        )

    def _clip(self) -> CLIP:
        if self.perception.clip is None:
            raise ConfigError("this environment needs perception backends: clip")
        return self.perception.clip

    def _captioner(self) -> Captioner:
        if self.perception.captioner is None:
            raise ConfigError("this environment needs perception backends: captioner")
        return self.perception.captioner

    def _answer_reward(self, action: AnswerAction) -> dict[str, float]:
        return self._search_reward(action, self.gtou_weight, self.call_cost * self.caption_calls)

    def _legal_kinds(self) -> list[str]:
        searchable = any(
            len(candidate_times(s, self.candidate_fps)) for s in getattr(self, "segments", [])
        )
        if self.rounds_left > 0 and self.frames_left > 0 and searchable:
            return ["query", "answer"]
        return ["answer"]

    # -- observation -----------------------------------------------------------------

    def _kind_observation(self) -> dict[str, Any]:
        frames = tuple(
            {"time": scalar(t), "caption": clean_text(c, CAPTION_CHARS)}
            for t, c in zip(self.times, self.captions, strict=True)
        )
        return {
            "frames": frames,
            "segments": tuple({"window": window_array(s)} for s in self.segments),
            "rounds_left": np.array([self.rounds_left], dtype=np.int64),
            "frames_left": np.array([self.frames_left], dtype=np.int64),
            "duration": scalar(self.video.duration),
        }

    def text_action_set(self) -> ClipQueryActionSet:
        """``query(segment, "text")`` and ``answer(...)`` (:class:`ClipQueryActionSet`)."""
        return ClipQueryActionSet()

    def observation_text(self, observation: dict[str, Any]) -> str:
        """The segments, the captions of the frames seen and the budgets, as text."""
        return clip_query_text(observation)

    def _info(self) -> dict[str, Any]:
        info = super()._info()
        info["retrieved"] = [dict(r) for r in getattr(self, "retrieved", [])]
        info["max_queries"] = self.max_queries
        return info

    def _current_window(self) -> Interval | None:
        t = getattr(self, "last_retrieved", None)
        return None if t is None else Interval(t, t)

    def _ansi_lines(self) -> list[str]:
        lines = [
            f"rounds left {self.rounds_left}, frames left {self.frames_left}, "
            f"{len(self.segments)} segments"
        ]
        lines += [f"  {t:8.1f} s  {c}" for t, c in zip(self.times, self.captions, strict=True)]
        return lines
