"""Running a Tools preset's calls on a video: frames, searches, captions, sub-model answers.

:class:`ToolRunner` executes one call (:class:`~video_env.envs.tool_calls.CallArgs`) of a
preset's tool over the env's video reader and perception backends and returns a
:class:`ToolResult`: the text the policy reads and the frames it is shown, each stamped
with its time. A caption index (DVD's and LongVidSearch's clips, FALCONEye's 60 s clip
captions) is built once per video and its cost reported apart (:class:`CaptionIndex`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from video_env.backends.base import FrameBatch, similarities
from video_env.envs.perception import Perception
from video_env.envs.spaces import clean_text
from video_env.envs.tool_calls import CallArgs, VideoFacts
from video_env.envs.tool_frames import (
    TooManyFrames,
    candidate_times,
    delivered_tokens,
    dpp_select,
    frame_count,
    frame_target,
    sample_times,
    spread,
)
from video_env.envs.tool_index import RESULT_CHARS, CaptionIndex, build_index
from video_env.envs.tool_rules import FrameRule, ToolPreset, ToolSpec
from video_env.errors import ConfigError, InvalidActionError
from video_env.types import Interval, VideoQA
from video_env.video.base import VideoReader

#: Videos whose caption index an env keeps (by file and length).
_INDEXES_KEPT = 8


@dataclass
class ToolResult:
    """What one call gave back: text, the frames shown to the policy, the spans looked at."""

    tool: str
    call: str
    text: str
    batch: FrameBatch | None = None
    tokens: int = 0
    spans: list[Interval] = field(default_factory=list)
    confidence: float | None = None
    _observed: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    def observed(self, most: int) -> dict[str, Any]:
        """The result as an observation's ``results`` entry (``most`` time slots).

        Built once (a result never changes); each observation gets fresh arrays.
        """
        if self._observed is None:
            self._observed = self._build(most)
        return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in self._observed.items()}

    def _build(self, most: int) -> dict[str, Any]:
        times = np.full(most, -1.0, dtype=np.float32)
        n = 0
        if self.batch is not None:
            n = min(len(self.batch), most)
            times[:n] = self.batch.times[:n]
        return {
            "tool": clean_text(self.tool, 64),
            "call": clean_text(self.call, 512),
            "text": clean_text(self.text, RESULT_CHARS),
            "times": times,
            "n_frames": np.array([n], dtype=np.int64),
        }


@dataclass(frozen=True)
class ToolContext:
    """What a call runs on: the episode's video (and its facts), backends, sample, index."""

    video: VideoReader
    facts: VideoFacts
    perception: Perception
    sample: VideoQA
    index: CaptionIndex | None


class ToolRunner:
    """Executes a preset's tools (one per env; it keeps the caption indexes it built).

    Args:
        preset: The preset.
        caption_max_tokens: Tokens of a clip caption in the index.
    """

    def __init__(self, preset: ToolPreset, caption_max_tokens: int = 64) -> None:
        self.preset = preset
        self.caption_max_tokens = caption_max_tokens
        self._indexes: dict[tuple[str, float], CaptionIndex] = {}

    # -- per video -------------------------------------------------------------------

    def facts(self, video: VideoReader) -> VideoFacts:
        """The video's length, frame rate and (Video-MTR's) frame pool."""
        duration = video.duration
        pool = np.zeros(0)
        if self.preset.pool:  # qwen-vl-utils: 1 fps, 4 to `pool` frames, an even count
            count = int(min(max(duration, 4.0), self.preset.pool, max(video.num_frames, 2)))
            count = max(2, count - count % 2)
            pool = np.linspace(0.0, max(0.0, duration - 1.0 / video.fps), count)
        n_clips = math.ceil(duration / self.preset.index_clip_s) if self.preset.index_clip_s else 0
        return VideoFacts(duration, video.fps, pool, n_clips)

    def index(self, video: VideoReader, perception: Perception) -> CaptionIndex | None:
        """The video's caption index (built on first use, then kept), if the preset has one."""
        clip_s = self.preset.index_clip_s
        if clip_s is None:
            return None
        key = (video.name, video.duration)
        if (index := self._indexes.get(key)) is None:
            index = build_index(video, perception, clip_s, self.caption_max_tokens)
            if len(self._indexes) >= _INDEXES_KEPT:
                self._indexes.pop(next(iter(self._indexes)))
            self._indexes[key] = index
        index.uses += 1
        return index

    def start(
        self, video: VideoReader, perception: Perception, index: CaptionIndex | None
    ) -> list[ToolResult]:
        """What the policy is shown at reset: the preview, and the index's captions."""
        results = []
        whole = Interval(0.0, video.duration)
        if (rule := self.preset.preview_rule(video.duration)) is not None:
            batch = self._batch(video, rule, whole)
            if self.preset.preview_captions:
                captioner = _needed(perception.captioner, "captioner")
                lines = [
                    f"{self.stamp(t)}: {captioner.caption(self._single(batch, i))}"
                    for i, t in enumerate(batch.times)
                ]
                results.append(ToolResult("preview", "", "\n".join(lines), spans=[whole]))
            else:
                results.append(self._frames_result("preview", "", batch, rule, [whole]))
        if index is not None and self.preset.index_shown:
            lines = [
                f"clip {i} [{self.stamp(c.start)}-{self.stamp(c.end)}]: {text}"
                for i, (c, text) in enumerate(zip(index.clips, index.captions, strict=True), 1)
            ]
            results.append(ToolResult("captions", "", "\n".join(lines)))
        return results

    # -- one call --------------------------------------------------------------------

    def run(self, spec: ToolSpec, args: CallArgs, ctx: ToolContext) -> ToolResult:
        """Run ``spec`` with ``args`` in the episode ``ctx``.

        Raises:
            InvalidActionError: Too many frames asked (where the rule refuses), an unknown
                clip id.
        """
        call = self._described(spec, args)
        spans = args.spans or [Interval(0.0, ctx.video.duration)]
        if spec.tool == "locate":
            return self._locate(spec, args, ctx.video, call)
        if spec.tool == "search":
            return self._search(spec, args, ctx, spans, call)
        if spec.tool == "read":
            return self._read(spec, args, ctx, spans, call)
        if spec.tool == "view":
            return self._view(spec, args, ctx, spans, call)
        if spec.tool == "overview":
            return self._overview(spec, args, ctx, call)
        return self._ask(spec, args, ctx, spans, call)

    def _view(
        self, spec: ToolSpec, args: CallArgs, ctx: ToolContext, spans: list[Interval], call: str
    ) -> ToolResult:
        video = ctx.video
        rule = self._rule(spec, video)
        if self.preset.position == "frame":  # FrameThinker: more frames than it returns
            first, last = round(spans[0].start * video.fps), round(spans[0].end * video.fps)
            if first >= last - self._count(rule, spans[0].length, args):
                raise InvalidActionError(
                    f"the range {first}-{last} must hold more frames than are returned"
                )  # the frames strictly inside: linspace(start + 1, end - 1, n)
            spans = [Interval((first + 1) / video.fps, (last - 1) / video.fps)]
        if self.preset.position == "pool":
            batch = _pool_batch(rule, spans[0], ctx.facts.pool, video)
        else:
            batch = self._spans_batch(rule, spans, args, video)
        return self._frames_result(spec.name, call, batch, rule, spans)

    def _overview(self, spec: ToolSpec, args: CallArgs, ctx: ToolContext, call: str) -> ToolResult:
        whole = Interval(0.0, ctx.video.duration)
        batch = self._batch(ctx.video, self._rule(spec, ctx.video), whole)
        if args.query:  # DVD's global browse answers a query
            text = _needed(ctx.perception.vlm, "vlm").answer(batch, args.query, None).text
        else:
            text = _needed(ctx.perception.captioner, "captioner").caption(
                batch, max_tokens=256, style="detailed"
            )
        return ToolResult(spec.name, call, text, spans=[whole])

    def _ask(
        self, spec: ToolSpec, args: CallArgs, ctx: ToolContext, spans: list[Interval], call: str
    ) -> ToolResult:
        """The sub-model's answer (and its confidence); its frames never reach the policy."""
        batch = self._spans_batch(self._rule(spec, ctx.video), spans, args, ctx.video)
        sample = ctx.sample
        question, options = (args.query, None) if args.query else (sample.question, sample.options)
        reply = _needed(ctx.perception.vlm, "vlm").answer(batch, question, options)
        confidence = min(max(float(reply.confidence), 0.0), 1.0)
        text = f"{reply.text} (confidence {confidence:.2f})"  # FALCONEye's calibrated reading
        return ToolResult(spec.name, call, text, spans=spans, confidence=confidence)

    def _rule(self, spec: ToolSpec, video: VideoReader) -> FrameRule:
        rule = spec.frame_rule(video.duration)
        if rule is None:
            raise ConfigError(f"{spec.name} has no frame rule")
        return rule

    def _count(
        self, rule: FrameRule, length: float, args: CallArgs, video_fps: float | None = None
    ) -> int:
        try:
            return frame_count(rule, length, args.n, args.fps, video_fps)
        except TooManyFrames as exc:
            raise InvalidActionError(
                self.preset.message("too_many_frames", count=exc.count, most=exc.most)
            ) from None

    def _spans_batch(
        self, rule: FrameRule, spans: list[Interval], args: CallArgs, video: VideoReader
    ) -> FrameBatch:
        """Frames of each span by the rule (the count of their total length, spread)."""
        lengths = [s.length for s in spans]
        shares = spread(self._count(rule, sum(lengths), args, video.fps), lengths)
        times = np.concatenate(
            [sample_times(rule, s, n) for s, n in zip(spans, shares, strict=True) if n]
        )
        return FrameBatch(video, np.sort(times), frame_target(rule, video.size))

    def _search(
        self, spec: ToolSpec, args: CallArgs, ctx: ToolContext, spans: list[Interval], call: str
    ) -> ToolResult:
        video, perception, index = ctx.video, ctx.perception, ctx.index
        clip = _needed(perception.clip, "clip")
        k = min(max(args.n or args.k or spec.k, 1), spec.max_k)
        if spec.returns == "captions":
            index = _needed(index, "caption index")
            if index.features is None:
                index.features = clip.text_features(index.captions)
            scores = similarities(index.features, clip.text_features([args.query])[0])
            best = sorted(np.argsort(-scores, kind="stable")[:k].tolist())  # in time order
            lines = [
                f"clip {i + 1} [{self.stamp(index.clips[i].start)}-"
                f"{self.stamp(index.clips[i].end)}]: {index.captions[i]}"
                for i in best
            ]
            return ToolResult(
                spec.name, call, "\n".join(lines), spans=[index.clips[i] for i in best]
            )
        scopes = sorted(spans, key=lambda span: (span.start, span.end))
        shares = spread(self.preset.max_candidates, [span.length for span in scopes])
        grid = self.preset.grid_fps
        times = np.concatenate(  # each span's own grid: never a time between two spans
            [candidate_times(span, grid, n) for span, n in zip(scopes, shares, strict=True) if n]
        )
        if args.query.strip():
            features = clip.image_features(video, times.tolist())
            scores = similarities(features, clip.text_features([args.query])[0])
            if spec.select == "dpp":
                chosen = dpp_select(features, scores, k)
            else:
                chosen = sorted(np.argsort(-scores, kind="stable")[:k].tolist())
        else:  # no query: uniform, as TimeSearch-R
            chosen = sorted(
                set(np.linspace(0, len(times) - 1, min(k, len(times))).round().astype(int).tolist())
            )
        picked = times[chosen]
        rule = self._rule(spec, video)
        batch = FrameBatch(video, picked, frame_target(rule, video.size))
        if spec.returns == "frame_captions":
            captioner = _needed(perception.captioner, "captioner")
            lines = [
                f"{self.stamp(t)}: {captioner.caption(self._single(batch, i))}"
                for i, t in enumerate(picked)
            ]
            return ToolResult(spec.name, call, "\n".join(lines), spans=scopes)
        return self._frames_result(spec.name, call, batch, rule, scopes)

    def _read(
        self, spec: ToolSpec, args: CallArgs, ctx: ToolContext, spans: list[Interval], call: str
    ) -> ToolResult:
        video, perception = ctx.video, ctx.perception
        if args.clip is not None:
            index = _needed(ctx.index, "caption index")
            if not 1 <= args.clip <= len(index.clips):
                raise InvalidActionError(
                    self.preset.message("bad_clip", argument=args.clip, most=len(index.clips))
                )
            spans = [index.clips[args.clip - 1]]
        rule = spec.frames or FrameRule(n=8, max_frames=8, max_pixels=448 * 448)
        batch = self._spans_batch(rule, spans, args, video)
        text = _needed(perception.captioner, "captioner").caption(
            batch, max_tokens=256, style="detailed"
        )
        return ToolResult(spec.name, call, text, spans=spans)

    def _locate(self, spec: ToolSpec, args: CallArgs, video: VideoReader, call: str) -> ToolResult:
        if args.time is None or not 0 <= args.time <= video.duration:
            raise InvalidActionError(
                f"the time must lie in the video (0 to {self.stamp(video.duration)})"
            )
        number = int(args.time * video.fps)
        return ToolResult(
            spec.name, call, f"Frame number at time {self.stamp(args.time)} is: {number}."
        )

    # -- helpers ---------------------------------------------------------------------

    def _batch(self, video: VideoReader, rule: FrameRule, span: Interval) -> FrameBatch:
        count = frame_count(rule, span.length) if rule.over_max == "clamp" else rule.max_frames
        return FrameBatch(video, sample_times(rule, span, count), frame_target(rule, video.size))

    @staticmethod
    def _single(batch: FrameBatch, i: int) -> FrameBatch:
        return FrameBatch(batch.video, batch.times[i : i + 1], batch.size)

    def _frames_result(
        self, tool: str, call: str, batch: FrameBatch, rule: FrameRule, spans: list[Interval]
    ) -> ToolResult:
        stamps = ", ".join(self.stamp(t) for t in batch.times)
        text = f"{len(batch)} frames at {stamps}"
        tokens = delivered_tokens(batch.size, len(batch), rule.as_video)
        return ToolResult(tool, call, text, batch, tokens, spans)

    def stamp(self, seconds: float) -> str:
        """A time as the preset writes it (``12.5s``, ``01:05``, ``00:01:05``)."""
        fmt = self.preset.time_format
        if fmt == "seconds":
            return f"{seconds:.1f}s"
        whole = int(seconds)
        hours, rest = divmod(whole, 3600)
        minutes, secs = divmod(rest, 60)
        if fmt == "mm:ss":
            return f"{hours * 60 + minutes:02d}:{secs:02d}"
        return f"{hours:02d}:{minutes:02d}:{secs:02d}"

    def _described(self, spec: ToolSpec, args: CallArgs) -> str:
        parts = [f"[{self.stamp(s.start)}, {self.stamp(s.end)}]" for s in args.spans]
        parts += [repr(args.query)] if args.query else []
        parts += [f"clip {args.clip}"] if args.clip is not None else []
        return f"{spec.name}({', '.join(parts)})"


def _pool_batch(
    rule: FrameRule, span: Interval, pool: npt.NDArray[np.float64], video: VideoReader
) -> FrameBatch:
    """Video-MTR's retrieve: ``min(b - a + 1, 8)`` pool frames of ``[a, b]``, evenly."""
    inside = np.flatnonzero((pool >= span.start - 1e-6) & (pool <= span.end + 1e-6))
    count = min(len(inside), rule.max_frames)
    chosen = inside[np.linspace(0, len(inside) - 1, count).astype(int)] if count else inside
    return FrameBatch(video, pool[chosen], frame_target(rule, video.size))


def _needed(value: Any, what: str) -> Any:
    if value is None:
        raise ConfigError(f"this preset's tools need a {what}")
    return value


def union_iou(viewed: list[Interval], truth: list[Interval]) -> float:
    """Temporal IoU of the union of ``viewed`` spans with the union of ``truth`` spans."""
    a, b = _merged(viewed), _merged(truth)
    inter = sum(max(0.0, min(x.end, y.end) - max(x.start, y.start)) for x in a for y in b)
    union = sum(x.length for x in a) + sum(y.length for y in b) - inter
    return inter / union if union > 0 else 0.0


def _merged(spans: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for span in sorted(spans, key=lambda s: s.start):
        if out and span.start <= out[-1].end:
            out[-1] = Interval(out[-1].start, max(out[-1].end, span.end))
        else:
            out.append(span)
    return out
