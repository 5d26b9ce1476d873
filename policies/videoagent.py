"""VideoAgent (Wang et al.) on the ClipQuery env: predict -> self-reflect -> find frames.

Each round the agent predicts an answer from the captions of the frames seen so far
(chain of thought, JSON answer), rates its confidence from 1 to 3, answers at 3, and
otherwise names the missing information as (segment, description) queries; CLIP in the
env retrieves and captions one frame per query. When no retrieval round is left it
answers without reflecting: with the env's default 2 retrieval rounds that is the
released ``main.py``'s 3 steps (predict, reflect, find | predict, reflect, find |
predict), 7 LLM calls at most. Prompts number frames at 1 fps as the paper does. The
answer's window comes from the frames that support it (the "+OQ" variant of FALCONEye's
comparison): from the first to the last supporting frame, widened by ``margin_s``.

Unusable LLM replies follow the released ``main.py`` by default (``on_unusable=
"released"``): an answer that cannot be parsed is ``-1`` (``parse_text_find_number``) and
becomes a random option when the agent answers, the self-reflection still runs on it, an
unparsable confidence is 1 (``parse_text_find_confidence``), and a find-frames reply that
yields no query ends the search with the current prediction (the released ``except``
branch answers on the same frames); replies are not re-asked (``reask=False``), so the
7-call bound holds. ``on_unusable="offline"`` hands unusable replies to the offline
heuristic instead, and ``reask=True`` re-asks once; both are counted (``caller.failures``,
``caller.reasks``, ``random_answers``).

Without an LLM the agent is reported as ``videoagent[offline]``: the documented heuristic
reasoner (option-caption matching, a confidence from the match, queries on the segments
around the most relevant frames), not the paper's agent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from policies import prompts
from policies.base import Policy
from policies.observations import Caption, frame_captions, parse_options, window_of
from policies.reasoning import JsonCaller, OfflineReasoner, clauses
from policies.simple import episode_rng, random_option
from video_env.actions import AnswerAction, QueryAction, SegmentQuery
from video_env.backends.llm.base import LLM
from video_env.envs.clip_query_rules import grid_frames
from video_env.errors import ConfigError
from video_env.metrics.answers import normalize_text
from video_env.types import Interval

_BOUND_TOL = 0.05  # seconds: a frame bounds a segment (float32 observations)
#: What an unusable LLM reply leads to (``on_unusable``).
ON_UNUSABLE = ("released", "offline")
_WH = re.compile(r"^(what|which|who|where|when|how)( \w+)?( is| are| does| do)?\s+", re.I)


class VideoAgentPolicy(Policy):
    """VideoAgent's loop (see the module docstring).

    Args:
        llm: The LLM (``None``: the offline reasoner).
        max_queries: Cap on an LLM's queries per round (``None``: the env's cap, by
            default the number of segments, as VideoAgent sets none).
        offline_queries: Queries per round of the offline reasoner.
        margin_s: Margin around the supporting frames for the answer's window.
        fps: Frame rate at which prompts number frames (VideoAgent's 1 fps).
        on_unusable: ``"released"`` (an unparsable answer is -1, a random option at the
            end; a find-frames reply without a query ends the search) or ``"offline"``
            (the offline heuristic takes over the step).
        reask: Re-ask once after an unusable reply (an extra LLM call each).
        seed: Seed of the random option that replaces an unparsable answer.

    Attributes:
        random_answers: Answers that were a random option (unparsable to the end).
    """

    env_kinds = ("clip_query",)

    def __init__(
        self,
        llm: LLM | None = None,
        max_queries: int | None = None,
        offline_queries: int = 2,
        margin_s: float = 5.0,
        fps: float = 1.0,
        on_unusable: str = "released",
        reask: bool = False,
        seed: int = 0,
    ) -> None:
        super().__init__(llm)
        if on_unusable not in ON_UNUSABLE:
            raise ConfigError(f"on_unusable must be one of {ON_UNUSABLE}, got {on_unusable!r}")
        self.max_queries, self.offline_queries = max_queries, offline_queries
        self.margin_s, self.fps = margin_s, fps
        self.on_unusable, self.seed = on_unusable, seed
        self.name = "videoagent" if llm is not None else "videoagent[offline]"
        self.reasoner = OfflineReasoner()
        self.caller = JsonCaller(llm, reask=reask) if llm is not None else None
        self.random_answers = 0
        self.rng = np.random.default_rng(seed)

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Seed this episode's random option (per sample, as :class:`RandomPolicy`)."""
        self.rng = episode_rng(self.seed, info)

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """One round: predict, reflect, then answer or query."""
        question, options = observation["question"], parse_options(observation["options"])
        duration = float(observation["duration"][0])
        captions = frame_captions(observation)
        answer, support, reasoning, confidence = self._predict(
            question, options, captions, duration
        )
        if confidence < 3 and "query" in info["legal_actions"]:
            if self.caller is not None:
                confidence = self._reflect(question, options, captions, duration, answer, reasoning)
            if confidence < 3:
                segments = [window_of(s["window"]) for s in observation["segments"]]
                limit = self._limit(info, len(segments), int(observation["frames_left"][0]))
                queries = self._queries(question, options, captions, segments, duration, limit)
                if queries:
                    return QueryAction(tuple(queries))
        if answer is None:  # released: -1 to the end becomes a random option
            answer = self._random_answer(options)
        return AnswerAction(answer, self._window(captions, support, duration))

    def _random_answer(self, options: Sequence[str]) -> str:
        """A random option in place of an unparsable answer (counted in ``random_answers``)."""
        self.random_answers += 1
        return random_option(self.rng, len(options))

    def _limit(self, info: dict[str, Any], n_segments: int, frames_left: int) -> int:
        """Queries this round may hold: the env's cap, the frames left, ours if set."""
        limit = min(int(info.get("max_queries", n_segments)), frames_left)
        return limit if self.max_queries is None else min(limit, self.max_queries)

    def _frames_context(self, captions: list[Caption], duration: float) -> dict[str, str]:
        """The prompts' frame fields: the video's 1 fps frame count and numbered captions."""
        return {
            "num_frames": str(grid_frames(duration, self.fps)),
            "duration": f"{duration:.0f}",
            "captions": _numbered(captions, self.fps),
        }

    # -- predict ---------------------------------------------------------------------

    def _predict(
        self, question: str, options: list[str], captions: list[Caption], duration: float
    ) -> tuple[str | None, list[int], str, int]:
        """``(answer, supporting frame indices, reasoning, offline confidence 1-3)``.

        The answer is ``None`` when the LLM's reply was unusable (``on_unusable=
        "released"``: the released -1).
        """
        if self.caller is not None:
            reply = self.caller.ask(
                prompts.render(
                    "videoagent/predict",
                    **self._frames_context(captions, duration),
                    question=question,
                    options_block=prompts.options_block(options),
                ),
                ["final_answer"],
            )
            if reply and str(reply.get("final_answer") or "").strip():
                frames = reply.get("supporting_frames")
                numbers = [_frame_number(c.window.start, self.fps) for c in captions]
                picked = [_as_int(k) for k in frames] if isinstance(frames, list) else []
                support = [numbers.index(k) for k in picked if k in numbers]
                return (
                    str(reply["final_answer"]).strip(),
                    support,
                    str(reply.get("reasoning", "")),
                    1,
                )
            if self.on_unusable == "released":
                return None, [], "(the reply could not be parsed)", 1
        return self._offline_predict(question, options, captions)

    def _offline_predict(
        self, question: str, options: list[str], captions: list[Caption]
    ) -> tuple[str, list[int], str, int]:
        texts = [c.text for c in captions]
        if options:
            answer, score, index = self.reasoner.answer(question, options, texts)
            confidence = 3 if score >= 1.0 else 2 if score >= 0.35 else 1
            return answer, [] if index is None else [index], "", confidence
        candidates = self._open_candidates(question, texts)
        if not candidates:
            return "unknown", [], "", 1
        score, clause, index = max(candidates)
        return clause, [index], "", 3 if score >= 0.3 else 2

    def _open_candidates(self, question: str, texts: Sequence[str]) -> list[tuple[float, str, int]]:
        """Caption clauses that share words with the question and add new ones."""
        asked = set(normalize_text(question).split())
        parts = [(i, c) for i, t in enumerate(texts) for c in clauses(t)]
        informative = []
        for i, clause in parts:
            words = set(normalize_text(clause).split())
            if words & asked and words - asked:
                informative.append((i, clause))
        rel = self.reasoner.relevance(question, (), [c for _, c in informative])
        return [(float(r), c, i) for r, (i, c) in zip(rel, informative, strict=True)]

    # -- reflect and find frames -------------------------------------------------------

    def _reflect(
        self,
        question: str,
        options: list[str],
        captions: list[Caption],
        duration: float,
        answer: str | None,
        reasoning: str,
    ) -> int:
        assert self.caller is not None
        reply = self.caller.ask(
            prompts.render(
                "videoagent/reflect",
                **self._frames_context(captions, duration),
                question=question,
                options_block=prompts.options_block(options),
                prediction=f"Answer: {answer or '(none)'}\nReasoning: {reasoning or '(none)'}",
            ),
            ["confidence"],
        )
        try:
            return min(3, max(1, int((reply or {}).get("confidence", 1))))
        except (TypeError, ValueError):
            return 1

    def _queries(
        self,
        question: str,
        options: list[str],
        captions: list[Caption],
        segments: list[Interval],
        duration: float,
        limit: int,
    ) -> list[SegmentQuery]:
        if self.caller is not None:
            reply = self.caller.ask(
                prompts.render(
                    "videoagent/find_frames",
                    **self._frames_context(captions, duration),
                    segments=_segments(segments, self.fps, grid_frames(duration, self.fps)),
                    n_segments=len(segments),
                    query_limit=_query_limit(self.max_queries),
                    question=question,
                    options_block=prompts.options_block(options),
                ),
                ["frame_descriptions"],
            )
            queries = _llm_queries(reply, len(segments), limit)
            if queries or self.on_unusable == "released":
                return queries  # released: no usable query ends the search
        queries = self._offline_queries(question, options, captions, segments)
        return queries[:limit]

    def _offline_queries(
        self, question: str, options: list[str], captions: list[Caption], segments: list[Interval]
    ) -> list[SegmentQuery]:
        """The question's subject, searched next to the most relevant frames.

        Segments are ranked by the relevance of their bounding frames' captions, longer
        segments first on ties.
        """
        rel = self.reasoner.relevance(question, options, [c.text for c in captions])
        scores = []
        times = [c.window.start for c in captions]
        for k, segment in enumerate(segments):
            neighbours = [
                rel[j]
                for j, t in enumerate(times)
                if abs(t - segment.start) < _BOUND_TOL or abs(t - segment.end) < _BOUND_TOL
            ]
            scores.append((float(np.max(neighbours)) if neighbours else 0.0, segment.length, k))
        description = _WH.sub("", question.strip().rstrip("?")) or question
        ranked = sorted((s for s in scores if segments[s[2]].length > 1.0), reverse=True)
        return [SegmentQuery(k + 1, description) for _, _, k in ranked[: self.offline_queries]]

    def _window(
        self, captions: list[Caption], support: list[int], duration: float
    ) -> Interval | None:
        times = [captions[i].window.start for i in support if 0 <= i < len(captions)]
        if not times:
            return None
        return Interval(
            max(0.0, min(times) - self.margin_s), min(duration, max(times) + self.margin_s)
        )


def _frame_number(t: float, fps: float) -> int:
    """The 1-based number of the frame at ``t`` seconds when frames are decoded at ``fps``."""
    return round(t * fps) + 1


def _numbered(captions: list[Caption], fps: float) -> str:
    """``frame k: caption`` lines, frames numbered at ``fps`` as in VideoAgent's prompts."""
    return "\n".join(f"frame {_frame_number(c.window.start, fps)}: {c.text}" for c in captions)


def _segments(segments: list[Interval], fps: float, n_frames: int) -> str:
    """``k: frames a - b (s to e seconds)`` lines: the segments and their durations."""
    lines = []
    for k, s in enumerate(segments, 1):
        first = _frame_number(s.start, fps)
        last = min(n_frames, _frame_number(s.end, fps))
        lines.append(f"{k}: frames {first} - {last} ({s.start:.0f}s to {s.end:.0f}s)")
    return "\n".join(lines)


def _query_limit(max_queries: int | None) -> str:
    return "" if max_queries is None else f"Ask for at most {max_queries} frames."


def _as_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _as_index(value: Any, n: int) -> int | None:
    """``value`` as a 1-based index up to ``n``, or ``None``."""
    index = _as_int(value)
    return index if index is not None and 1 <= index <= n else None


def _llm_queries(reply: dict[str, Any] | None, n_segments: int, limit: int) -> list[SegmentQuery]:
    raw = (reply or {}).get("frame_descriptions")
    if not isinstance(raw, list):
        return []
    queries, seen = [], set()
    for item in raw:
        if not isinstance(item, dict):
            continue
        segment = _as_index(item.get("segment_id"), n_segments)
        text = str(item.get("description") or "").strip()
        if segment is None or not text:
            continue
        key = (segment, text)
        if key not in seen:
            seen.add(key)
            queries.append(SegmentQuery(*key))
    return queries[:limit]
