"""FALCONEye (Plou et al.) on the Zoom env: captions -> reasoning -> VLM evaluation -> decision.

The loop of the paper and its released code (``cplou99/FALCONEye``, lmms-eval model
``falcon_eye``); ``docs/fidelity.md`` maps each step to this code and its tests.

1. Pre-processing: the light captions of every 60 s clip (the observation) and, with an
   LLM, a summary of the video built from the captions alone, once per video (cached
   across questions).
2. Reasoning: the LLM picks ``m`` candidate clips, ``0 <= m <= n_candidates``, from the
   summary and the captions of the clips not explored yet (explored ones are left out of
   its input). ``m = 0`` ends the search with the final decision.
3. Evaluation: the VLM answers on one candidate window per step (the released code
   checks the threshold after every evaluation).
4. Decision: a confidence *strictly above* the threshold (0.9 MCQ / 0.8 open) on a
   window of at most ``max_answer_window_s`` (60 s) ends an MCQ; for an open question the
   LLM decides from the answer's completeness, the confidences, the captions and the
   windows whether to answer, zoom or reason again. When a batch of candidates is done,
   the LLM picks any number of the evaluated windows to zoom into (60 s -> 20 s -> 5 s),
   or none (reason again); near the threshold (``> threshold - 0.1``) it may also answer
   an open question (the released code's near-threshold check). When the budget is spent,
   the final decision picks the answer from all evaluations.

Presets: Pro (45 evaluations) and Flash (10). Without an LLM the agent is reported as
``falconeye[offline]`` / ``falconeye-flash[offline]``: the documented heuristic reasoner,
not the paper's agent (it zooms into the most confident window, reasons by caption
relevance, and rejects non-answers such as refusals at the threshold).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from policies.base import Policy
from policies.falconeye_prompts import (
    decision_prompt,
    final_prompt,
    reasoning_prompt,
    summary_prompt,
)
from policies.falconeye_steps import (
    SPLITS,
    Context,
    Decision,
    candidate_windows,
    children,
    video_key,
    window_key,
)
from policies.observations import (
    Caption,
    Evaluation,
    clip_captions,
    evaluations,
    most_confident,
    parse_options,
    threshold_for,
)
from policies.reasoning import JsonCaller, OfflineReasoner, is_non_answer, window_from
from video_env.actions import AnswerAction, EvaluateAction
from video_env.backends.llm.base import LLM
from video_env.errors import ConfigError
from video_env.types import Interval

PRESETS = {"pro": 45, "flash": 10}
#: Windows at most this long are not zoomed into (the released code's 4 x 2 s).
MIN_ZOOM_S = 8.0
#: Longest video the released code evaluates whole before searching (``whole_video_first``).
WHOLE_VIDEO_MAX_S = 600.0
#: How far below the threshold the near-threshold check lets the LLM answer.
NEAR_THRESHOLD_MARGIN = 0.1
#: What the decision step may be shown (``decision_input``).
DECISION_INPUTS = ("batch", "all")
_TOL = 0.05  # seconds: windows read back from float32 observations


class FalconEyePolicy(Policy):
    """FALCONEye's exploration (see the module docstring).

    Args:
        llm: The LLM (``None``: the offline reasoner).
        preset: ``"pro"`` (45 evaluations) or ``"flash"`` (10).
        n_candidates: Most clips one reasoning step may pick (the released code's 5).
        offline_candidates: Clips the offline reasoner picks per reasoning step.
        max_zoom: Most windows zoomed into per decision (``None``: any number the LLM
            picks); the offline reasoner zooms into ``max_zoom or 1``.
        max_answer_window_s: Longest window whose confidence can end the search (the
            released code's 60 s; ``None``: any).
        near_threshold_check: Let the LLM answer an open question whose best confidence
            is within 0.1 below the threshold once a batch is done (released code).
        whole_video_first: Evaluate the whole video first when it lasts at most
            ``WHOLE_VIDEO_MAX_S`` (the released code does, so on by default; see
            ``docs/fidelity.md``): its answer joins the decisions, but it is never zoomed
            into and, over 60 s, cannot end the search.
        decision_input: What the decision step is shown: ``"batch"`` (the evaluations
            since the last decision: the released code's ``curr_responses_dict``) or
            ``"all"`` (every evaluation so far).
        zoom_split: How a zoomed window is cut (``falconeye_steps.children``):
            ``"released"`` drops a partial window's remainder, ``"even"`` splits evenly.
    """

    env_kinds = ("zoom",)

    def __init__(
        self,
        llm: LLM | None = None,
        preset: str = "pro",
        n_candidates: int = 5,
        offline_candidates: int = 3,
        max_zoom: int | None = None,
        max_answer_window_s: float | None = 60.0,
        near_threshold_check: bool = True,
        whole_video_first: bool = True,
        decision_input: str = "batch",
        zoom_split: str = "released",
    ) -> None:
        super().__init__(llm)
        if preset not in PRESETS:
            raise ConfigError(f"unknown preset {preset!r}; known: {sorted(PRESETS)}")
        if n_candidates < 1 or offline_candidates < 1 or (max_zoom is not None and max_zoom < 1):
            raise ConfigError("n_candidates, offline_candidates and max_zoom must be >= 1")
        if decision_input not in DECISION_INPUTS:
            raise ConfigError(f"decision_input must be one of {DECISION_INPUTS}")
        if zoom_split not in SPLITS:
            raise ConfigError(f"zoom_split must be one of {SPLITS}")
        self.decision_input, self.zoom_split = decision_input, zoom_split
        self.preset, self.n_candidates, self.max_zoom = preset, n_candidates, max_zoom
        self.offline_candidates = offline_candidates
        self.max_answer_window_s = max_answer_window_s
        self.near_threshold_check = near_threshold_check
        self.whole_video_first = whole_video_first
        self.env_kwargs = {"zoom": {"budget": PRESETS[preset]}}
        base = "falconeye" if preset == "pro" else f"falconeye-{preset}"
        self.name = base if llm is not None else f"{base}[offline]"
        self.reasoner = OfflineReasoner()
        self.caller = JsonCaller(llm) if llm is not None else None
        self.summaries: dict[str, str] = {}  # per video (captions), across questions
        self.reset({}, {})

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Forget the previous episode (summaries of videos are kept)."""
        self.summary = ""
        self.explored: set[tuple[int, int]] = set()
        self.zoomed: set[tuple[int, int]] = set()
        self.checked: set[tuple[int, int]] = set()
        self.queue: list[Interval] = []
        self.seen = 0  # evaluations already read
        self.batch: list[Evaluation] = []  # evaluations since the last decision
        self.started = False
        self.duration = float("inf")

    # -- the loop --------------------------------------------------------------------

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Decide, then evaluate the next candidate or answer (module docstring)."""
        question, options = observation["question"], parse_options(observation["options"])
        duration = float(observation["duration"][0])
        self.duration = duration
        captions = clip_captions(observation)
        done = evaluations(observation)
        self.batch += done[self.seen :]
        self.seen = len(done)
        budget = int(observation["budget_left"][0]) if "evaluate" in info["legal_actions"] else 0
        threshold = float(np.float32(threshold_for(options)))  # float32 observations
        if self.caller is not None and not self.summary:
            self.summary = self._summarise(captions, duration)
        context = Context(question, options, captions, done, duration, threshold, budget)
        answer = self._at_threshold(context)
        if answer is not None:
            return answer
        if budget <= 0:
            return self._final(context)
        if not self.started:
            self.started = True
            if self.whole_video_first and duration <= WHOLE_VIDEO_MAX_S:
                self.queue = [Interval(0.0, duration)]
        self.queue = [w for w in self.queue if window_key(w) not in self.explored]
        if not self.queue:
            decided = self._between_batches(context)
            if isinstance(decided, AnswerAction):
                return decided
            self.queue = list(dict.fromkeys(decided))  # each window once, in order
            if not self.queue:  # m = 0: the search ends
                return self._final(context)
        window = self.queue.pop(0)
        self.explored.add(window_key(window))
        return EvaluateAction((window,))

    def _answerable(self, e: Evaluation) -> bool:
        longest = self.max_answer_window_s
        return longest is None or e.window.length <= longest + _TOL

    def _at_threshold(self, c: Context) -> AnswerAction | None:
        """An answer once a confidence exceeds the threshold (MCQ), or the LLM accepts it."""
        above = [
            e
            for e in c.done
            if e.confidence > c.threshold
            and self._answerable(e)
            and window_key(e.window) not in self.checked
        ]
        top = most_confident(above)
        if top is None:
            return None
        self.checked.add(window_key(top.window))
        if c.options:  # MCQ: the confidence rule
            return AnswerAction(top.answer, top.window)
        if self.caller is None:  # offline: at least reject non-answers
            return None if is_non_answer(top.answer) else AnswerAction(top.answer, top.window)
        decision = self._llm_decision(c, top, allow_answer=True, shown=self.batch)
        if decision is not None:
            self.batch = []  # decided upon: no second decision on the same windows
        if decision is None:  # the LLM failed: the offline rule
            return None if is_non_answer(top.answer) else AnswerAction(top.answer, top.window)
        if decision.kind == "answer":
            return decision.answer_action(top)
        if decision.kind == "zoom":
            self.queue = self._zoom_ins(decision.zoom) + self.queue
        else:  # reason: drop the rest of this batch and search new clips
            self.queue = []
        return None

    def _between_batches(self, c: Context) -> list[Interval] | AnswerAction:
        """After a batch: zoom into chosen windows, or reason for new candidates."""
        batch, self.batch = self.batch, []
        zoomable = [e for e in batch if self._zoomable(e.window)]
        best = most_confident([e for e in batch if self._answerable(e)])
        near = (
            self.near_threshold_check
            and not c.options
            and best is not None
            and best.confidence > c.threshold - NEAR_THRESHOLD_MARGIN
            and window_key(best.window) not in self.checked
        )
        if self.caller is not None and (zoomable or near):
            if near and best is not None:
                self.checked.add(window_key(best.window))
            decision = self._llm_decision(
                c, best, allow_answer=near, zoomable=zoomable, shown=batch
            )
            if decision is not None:
                if decision.kind == "answer" and best is not None:
                    return decision.answer_action(best)
                if decision.kind == "zoom":
                    zoom = self._zoom_ins(decision.zoom)
                    if zoom:
                        return zoom
                return self._reason(c)
        targets = sorted(zoomable, key=lambda e: -e.confidence)[: self.max_zoom or 1]
        zoom = self._zoom_ins([e.window for e in targets])
        return zoom or self._reason(c)

    def _zoomable(self, window: Interval) -> bool:
        if window.start <= _TOL and window.length >= self.duration - _TOL:
            return False  # the whole video: followed by reasoning, never split
        return window.length > MIN_ZOOM_S + _TOL and window_key(window) not in self.zoomed

    def _zoom_ins(self, targets: Sequence[Interval]) -> list[Interval]:
        """The unexplored children of ``targets`` (each zoomed into once)."""
        windows = []
        for target in targets:
            if not self._zoomable(target):
                continue
            self.zoomed.add(window_key(target))
            windows += [
                w for w in children(target, self.zoom_split) if window_key(w) not in self.explored
            ]
        return windows

    def _reason(self, c: Context) -> list[Interval]:
        """``m`` new candidate clips (``m = 0`` ends the search); explored clips excluded."""
        fresh = [cap for cap in c.captions if window_key(cap.window) not in self.explored]
        if not fresh:
            return []
        if self.caller is not None:
            picked = self._llm_candidates(c, fresh)
            if picked is not None:
                return picked
        rel = self.reasoner.relevance(c.question, c.options, [cap.text for cap in fresh])
        order = sorted(range(len(fresh)), key=lambda i: -rel[i])
        return [fresh[i].window for i in order[: self.offline_candidates]]

    def _final(self, c: Context) -> AnswerAction:
        """The final decision once the budget is spent or the search ended."""
        if self.caller is not None and c.done:
            reply = self.caller.ask(final_prompt(c, self.summary), ["final_answer"])
            text = str((reply or {}).get("final_answer") or "").strip()
            if reply and text and text.lower() != "nan":
                window = window_from(reply.get("window"), c.duration)
                return AnswerAction(text, Interval(*window) if window else None)
        top = most_confident(c.done)
        if top is None:
            return AnswerAction("A" if c.options else "unknown")
        return AnswerAction(top.answer, top.window)

    # -- LLM steps ---------------------------------------------------------------------

    def _summarise(self, captions: list[Caption], duration: float) -> str:
        """The question-independent summary of the video, cached per video."""
        assert self.caller is not None
        key = video_key(captions, duration)
        if key not in self.summaries:
            reply = self.caller.ask(summary_prompt(captions, duration), ["summary"])
            summary = str((reply or {}).get("summary") or "").strip()
            if not summary:  # a failed summary only weakens the reasoning; not cached
                return ""
            self.summaries[key] = summary
        return self.summaries[key]

    def _llm_candidates(self, c: Context, fresh: list[Caption]) -> list[Interval] | None:
        """The LLM's unexplored candidates (possibly none: ``m = 0``).

        ``None`` when the reply was unusable: no list, or a list whose windows are all
        explored or malformed (the offline reasoner then picks).
        """
        assert self.caller is not None
        prompt = reasoning_prompt(c, self.summary, fresh, self.n_candidates)
        reply = self.caller.ask(prompt, ["candidates"])
        raw = reply.get("candidates") if reply else None
        if not isinstance(raw, list):
            return None
        windows = candidate_windows(raw, c.duration)
        fresh_windows = [w for w in windows if window_key(w) not in self.explored]
        if raw and not fresh_windows:  # only explored or unusable windows: no usable pick
            return None
        return fresh_windows[: self.n_candidates]

    def _llm_decision(
        self,
        c: Context,
        best: Evaluation | None,
        *,
        allow_answer: bool,
        zoomable: Sequence[Evaluation] = (),
        shown: Sequence[Evaluation] = (),
    ) -> Decision | None:
        """The LLM's decision (answer / zoom / reason), or ``None`` when unusable.

        It sees ``shown`` (the current batch) by default, every evaluation with
        ``decision_input="all"``.
        """
        assert self.caller is not None
        seen = list(c.done) if self.decision_input == "all" or not shown else list(shown)
        zoomable = zoomable or [e for e in seen if self._zoomable(e.window)]
        prompt = decision_prompt(c, self.summary, seen, zoomable, allow_answer)
        reply = self.caller.ask(prompt, ["decision"])
        if reply is None:
            return None
        return Decision.parse(reply, c.duration, allow_answer=allow_answer)
