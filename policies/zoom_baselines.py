"""Baselines of FALCONEye's comparison on the Zoom env: Socratic, Sequential, Iterative."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from policies import prompts
from policies.base import Policy
from policies.observations import (
    Caption,
    clip_captions,
    evaluations,
    format_captions,
    most_confident,
    parse_options,
    threshold_for,
)
from policies.reasoning import JsonCaller, OfflineReasoner, window_from
from video_env.actions import AnswerAction, EvaluateAction
from video_env.backends.llm.base import LLM
from video_env.errors import ConfigError
from video_env.types import Interval

#: Zoom budget large enough for exhaustive baselines (Sequential reads every clip).
UNLIMITED = {"zoom": {"budget": 100_000}}


#: Caption lengths of FALCONEye's Table 3: Socratic (768 tokens) and Socratic-Short (64).
SOCRATIC_TOKENS = {"socratic": 768, "socratic-short": 64}


class SocraticPolicy(Policy):
    """Captions to answer, without a VLM question (FALCONEye's Socratic baselines).

    The env captions every 60 s clip with at most ``caption_tokens`` tokens (its caption
    calls are the episode's perception cost): 768 for *Socratic*, 64 (FALCONEye's light
    captions) for *Socratic-Short* (``short=True``), as in FALCONEye's Table 3; the
    released ``socratic_model.py`` sets ``vlm_caption_max_new_tokens`` (64, "Socratic
    original: 768") with the light-caption prompt. With an LLM the captions and the
    question go into one prompt; offline, the documented reasoner matches options (or
    question) against captions.

    Args:
        llm: The LLM (``None``: offline reasoner).
        short: Socratic-Short (64-token captions).
        caption_tokens: Caption length (``None``: 768, or 64 when ``short``).
        top_k: The library's own variant: keep only the ``top_k`` clips most relevant to
            the question in the prompt (``None``: every clip, as both papers' rows).
    """

    env_kinds = ("zoom",)

    def __init__(
        self,
        llm: LLM | None = None,
        short: bool = False,
        caption_tokens: int | None = None,
        top_k: int | None = None,
    ) -> None:
        super().__init__(llm)
        base = "socratic-short" if short else "socratic"
        self.caption_tokens = (
            caption_tokens if caption_tokens is not None else SOCRATIC_TOKENS[base]
        )
        if self.caption_tokens < 1 or (top_k is not None and top_k < 1):
            raise ConfigError("caption_tokens and top_k must be >= 1")
        self.short, self.top_k = short, top_k
        self.env_kwargs = {"zoom": {"caption_max_tokens": self.caption_tokens}}
        self.reasoner = OfflineReasoner()
        self.caller = JsonCaller(llm) if llm is not None else None
        if top_k is not None:
            base = f"{base}-top{top_k}"
        self.name = base if llm is not None else f"{base}[offline]"

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Answer from the captions at once."""
        question, options = observation["question"], parse_options(observation["options"])
        captions = clip_captions(observation)
        if self.top_k is not None:
            rel = self.reasoner.relevance(question, options, [c.text for c in captions])
            keep = sorted(sorted(range(len(captions)), key=lambda i: -rel[i])[: self.top_k])
            captions = [captions[i] for i in keep]
        if self.caller is None:
            text, _, index = self.reasoner.answer(question, options, [c.text for c in captions])
            return AnswerAction(text, captions[index].window if index is not None else None)
        return self._ask(question, options, captions, float(observation["duration"][0]))

    def _ask(
        self, question: str, options: list[str], captions: list[Caption], duration: float
    ) -> Any:
        prompt = prompts.render(
            "baselines/socratic",
            captions=format_captions(captions),
            question=question,
            options_block=prompts.options_block(options),
        )
        assert self.caller is not None
        reply = self.caller.ask(prompt, ["answer"]) or {}
        window = window_from(reply.get("window"), duration)
        text = str(reply.get("answer") or "").strip() or ("A" if options else "unknown")
        return AnswerAction(text, Interval(*window) if window else None)


class SequentialPolicy(Policy):
    """The VLM on consecutive 60 s clips from the start (FALCONEye's Sequential).

    ``early_stop`` (SequentialBP) answers as soon as a clip's confidence is strictly
    above the threshold (0.8 open / 0.9 MCQ), as the released ``sequentialbp_model.py``
    loops ``while confidence <= conf_thres``; ``stop_at_threshold=True`` also stops at a
    confidence equal to it. Otherwise every clip is read and the most confident answer
    wins.

    Args:
        early_stop: SequentialBP.
        batch: Clips evaluated per step (``None``: 1 with ``early_stop``, one clip at a
            time as released so no clip past the stopping one is paid for; else 8).
        stop_at_threshold: SequentialBP stops at ``confidence >= threshold``.
    """

    env_kinds = ("zoom",)
    env_kwargs = UNLIMITED

    def __init__(
        self, early_stop: bool = False, batch: int | None = None, stop_at_threshold: bool = False
    ) -> None:
        super().__init__()
        self.early_stop, self.stop_at_threshold = early_stop, stop_at_threshold
        self.batch = batch if batch is not None else (1 if early_stop else 8)
        if self.batch < 1:
            raise ConfigError(f"batch must be >= 1, got {batch}")
        self.name = "sequential-bp" if early_stop else "sequential"

    def _stops(self, confidence: float, threshold: float) -> bool:
        threshold = float(np.float32(threshold))  # observations carry float32 confidences
        if self.stop_at_threshold:
            return confidence >= threshold
        return confidence > threshold

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Evaluate the next clips, or answer."""
        done = evaluations(observation)
        threshold = threshold_for(parse_options(observation["options"]))
        top = most_confident(done)
        if self.early_stop and top is not None and self._stops(top.confidence, threshold):
            return AnswerAction(top.answer, top.window)
        clips = [c.window for c in clip_captions(observation)][len(done) :]
        budget = int(observation["budget_left"][0])
        if clips and budget > 0 and "evaluate" in info["legal_actions"]:
            return EvaluateAction(tuple(clips[: min(self.batch, budget)]))
        return AnswerAction(top.answer if top else "unknown", top.window if top else None)


class IterativeSamplingPolicy(Policy):
    """Coarse-to-fine sampling over the whole video.

    Evaluates ``splits`` equal windows, zooms into the most confident one, and repeats
    until a window is short, confident, or the budget ends.

    Args:
        splits: Windows per level.
        min_window_s: Shortest window.
    """

    name = "iterative-sampling"
    env_kinds = ("zoom",)

    def __init__(self, splits: int = 4, min_window_s: float = 5.0) -> None:
        super().__init__()
        self.splits, self.min_window_s = splits, min_window_s
        self._pending = 0  # windows of the last level (the newest evaluations)

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Start from the whole video."""
        self._pending = 0

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Split the current focus window, or answer."""
        done = evaluations(observation)
        threshold = threshold_for(parse_options(observation["options"]))
        focus = most_confident(done[-self._pending :]) if self._pending else None
        if focus is None:
            target = Interval(0.0, float(observation["duration"][0]))
        elif focus.confidence >= threshold or focus.window.length < 2 * self.min_window_s:
            # confident, or too short to split into pieces of min_window_s: answer
            return AnswerAction(focus.answer, focus.window)
        else:
            target = focus.window
        budget = int(observation["budget_left"][0])
        n = min(self.splits, budget, max(2, math.floor(target.length / self.min_window_s)))
        if budget <= 0 or "evaluate" not in info["legal_actions"]:
            top = most_confident(done)
            return AnswerAction(top.answer if top else "unknown", top.window if top else None)
        step = target.length / n
        self._pending = n
        return EvaluateAction(
            tuple(
                Interval(target.start + k * step, target.start + (k + 1) * step) for k in range(n)
            )
        )
