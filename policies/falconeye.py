"""FALCONEye (Plou et al.) on the Zoom env: captions -> reasoning -> VLM evaluation -> decision.

1. Pre-processing: the light captions of every 60 s clip (the observation) and, with an
   LLM, a summary of the video.
2. Reasoning: pick candidate clips from captions and question (LLM, or the offline
   reasoner's caption-question relevance), never clips already explored.
3. Evaluation: the VLM answers on the candidates through ``evaluate``.
4. Decision: answer once a confidence reaches the threshold (0.8 open / 0.9 MCQ); else zoom
   into promising windows (60 s -> 20 s -> 5 s) or re-reason without the explored clips.
   When the budget is spent, a final decision picks the answer.

Presets: Pro (45 evaluations) and Flash (10). Without an LLM the agent is reported as
``falconeye[offline]`` / ``falconeye-flash[offline]``: the documented heuristic reasoner,
not the paper's agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from policies import prompts
from policies.base import Policy
from policies.observations import (
    Caption,
    Evaluation,
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
from video_env.errors import BackendError, ConfigError
from video_env.types import Interval

PRESETS = {"pro": 45, "flash": 10}
_TOL = 0.05  # seconds: windows read back from float32 observations


def children(window: Interval) -> list[Interval]:
    """The zoom-in of a window: 20 s pieces of a longer one, 5 s pieces of a 20 s one."""
    size = 20.0 if window.length > 20.0 + _TOL else 5.0
    if window.length <= 5.0 + _TOL:
        return []
    n = max(2, round(window.length / size))
    step = window.length / n
    return [Interval(window.start + k * step, window.start + (k + 1) * step) for k in range(n)]


def _key(window: Interval) -> tuple[int, int]:
    return round(window.start * 10), round(window.end * 10)


class FalconEyePolicy(Policy):
    """FALCONEye's exploration (see the module docstring).

    Args:
        llm: The LLM (``None``: the offline reasoner).
        preset: ``"pro"`` (45 evaluations) or ``"flash"`` (10).
        n_candidates: Clips picked per reasoning step.
        max_zoom: Windows zoomed into per decision.
    """

    env_kinds = ("zoom",)

    def __init__(
        self, llm: LLM | None = None, preset: str = "pro", n_candidates: int = 3, max_zoom: int = 1
    ) -> None:
        super().__init__(llm)
        if preset not in PRESETS:
            raise ConfigError(f"unknown preset {preset!r}; known: {sorted(PRESETS)}")
        self.preset, self.n_candidates, self.max_zoom = preset, n_candidates, max_zoom
        self.env_kwargs = {"zoom": {"budget": PRESETS[preset]}}
        base = "falconeye" if preset == "pro" else f"falconeye-{preset}"
        self.name = base if llm is not None else f"{base}[offline]"
        self.reasoner = OfflineReasoner()
        self.caller = JsonCaller(llm) if llm is not None else None
        self.reset({}, {})

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Forget the previous episode."""
        self.summary: str | None = None
        self.explored: set[tuple[int, int]] = set()
        self.zoomed: set[tuple[int, int]] = set()

    # -- the loop --------------------------------------------------------------------

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Reason, evaluate, decide (see the module docstring)."""
        question, options = observation["question"], parse_options(observation["options"])
        duration = float(observation["duration"][0])
        captions = clip_captions(observation)
        done = evaluations(observation)
        budget = int(observation["budget_left"][0]) if "evaluate" in info["legal_actions"] else 0
        threshold = threshold_for(options)
        top = most_confident([e for e in done if e.confidence >= threshold])
        if top is not None:
            return AnswerAction(top.answer, top.window)
        if budget <= 0:
            return self._final(question, options, done, duration)
        if self.summary is None and self.caller is not None:
            self.summary = self._summarise(question, captions, duration)
        windows = self._decide(question, options, captions, done, duration, threshold, budget)
        if not windows:
            return self._final(question, options, done, duration)
        windows = windows[:budget]
        self.explored.update(_key(w) for w in windows)
        return EvaluateAction(tuple(windows))

    def _decide(
        self,
        question: str,
        options: list[str],
        captions: list[Caption],
        done: list[Evaluation],
        duration: float,
        threshold: float,
        budget: int,
    ) -> list[Interval]:
        """Windows to evaluate next: zoom-ins, or new candidates from reasoning."""
        if done and self.caller is not None:
            choice = self._llm_decision(question, options, done, duration, threshold, budget)
            if choice:  # zoom-ins chosen by the LLM
                return choice
            if choice is not None:  # "reason": new candidates, explored clips excluded
                return self._reason(question, options, captions, duration)
        zoom = self._zoom_ins(done)
        if zoom:
            return zoom
        return self._reason(question, options, captions, duration)

    def _zoom_ins(self, done: list[Evaluation], chosen: Sequence[Interval] = ()) -> list[Interval]:
        """Children of the most confident evaluated windows not zoomed into yet."""
        targets = (
            list(chosen)
            or [
                e.window
                for e in sorted(done, key=lambda e: -e.confidence)
                if _key(e.window) not in self.zoomed and children(e.window)
            ][: self.max_zoom]
        )
        windows = []
        for target in targets:
            self.zoomed.add(_key(target))
            windows += [c for c in children(target) if _key(c) not in self.explored]
        return windows

    def _reason(
        self, question: str, options: list[str], captions: list[Caption], duration: float
    ) -> list[Interval]:
        """New candidate clips, none explored before."""
        fresh = [c for c in captions if _key(c.window) not in self.explored]
        if not fresh:
            return []
        if self.caller is not None:
            picked = self._llm_candidates(question, options, captions, duration)
            picked = [w for w in picked if _key(w) not in self.explored]
            if picked:
                return picked[: self.n_candidates]
        rel = self.reasoner.relevance(question, options, [c.text for c in fresh])
        order = sorted(range(len(fresh)), key=lambda i: -rel[i])
        return [fresh[i].window for i in order[: self.n_candidates]]

    def _final(
        self, question: str, options: list[str], done: list[Evaluation], duration: float
    ) -> AnswerAction:
        """The final decision once the budget is spent (or nothing is left to explore)."""
        if self.caller is not None and done:
            reply = self.caller.ask(
                prompts.render(
                    "falconeye/final",
                    evaluations=_format_evaluations(done),
                    question=question,
                    options_block=prompts.options_block(options),
                ),
                ["answer"],
            )
            if reply and str(reply.get("answer") or "").strip():
                window = window_from(reply.get("window"), duration)
                return AnswerAction(
                    str(reply["answer"]).strip(), Interval(*window) if window else None
                )
        top = most_confident(done)
        if top is None:
            return AnswerAction("A" if options else "unknown")
        return AnswerAction(top.answer, top.window)

    # -- LLM steps ---------------------------------------------------------------------

    def _summarise(self, question: str, captions: list[Caption], duration: float) -> str:
        assert self.llm is not None
        prompt = prompts.render(
            "falconeye/summary",
            duration=f"{duration:.0f}",
            captions=format_captions(captions),
            max_words=150,
            question=question,
        )
        try:
            return self.llm.chat([{"role": "user", "content": prompt}], max_tokens=300).text.strip()
        except BackendError as exc:  # a failed summary only weakens the reasoning
            assert self.caller is not None
            self.caller.failures += 1
            self.caller.errors.append(f"summary failed: {exc}")
            return ""

    def _llm_candidates(
        self, question: str, options: list[str], captions: list[Caption], duration: float
    ) -> list[Interval]:
        assert self.caller is not None
        explored = (
            ", ".join(f"[{a / 10:g}, {b / 10:g}]" for a, b in sorted(self.explored)) or "none"
        )
        reply = self.caller.ask(
            prompts.render(
                "falconeye/reasoning",
                duration=f"{duration:.0f}",
                question=question,
                options_block=prompts.options_block(options),
                summary=self.summary or "(none)",
                captions=format_captions(captions),
                explored=explored,
                n_candidates=self.n_candidates,
            ),
            ["candidates"],
        )
        raw = reply.get("candidates") if reply else None
        windows = [window_from(v, duration) for v in raw] if isinstance(raw, list) else []
        return [Interval(*w) for w in windows if w is not None]

    def _llm_decision(
        self,
        question: str,
        options: list[str],
        done: list[Evaluation],
        duration: float,
        threshold: float,
        budget: int,
    ) -> list[Interval] | None:
        """The LLM's choice: zoom windows, ``[]`` to re-reason, or ``None`` (fallback)."""
        assert self.caller is not None
        reply = self.caller.ask(
            prompts.render(
                "falconeye/decision",
                duration=f"{duration:.0f}",
                question=question,
                options_block=prompts.options_block(options),
                evaluations=_format_evaluations(done),
                budget_left=budget,
                threshold=threshold,
                max_zoom=self.max_zoom,
            ),
            ["decision"],
        )
        if not reply:
            return None
        decision = str(reply.get("decision", "")).lower()
        if decision == "zoom" and isinstance(reply.get("zoom"), list):
            chosen = [window_from(v, duration) for v in reply["zoom"]]
            zoom = self._zoom_ins(done, [Interval(*w) for w in chosen if w is not None])
            return zoom or None
        if decision == "reason":
            return []
        return None  # "answer" below the threshold, or malformed: the offline rule decides


def _format_evaluations(done: list[Evaluation]) -> str:
    return "\n".join(
        f"[{e.window.start:.0f}-{e.window.end:.0f}s] {e.answer} ({e.confidence:.2f})" for e in done
    )
