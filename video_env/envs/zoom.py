"""The Zoom environment: FALCONEye's search over time windows with a VLM budget."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from video_env.actions.types import Action, AnswerAction, EvaluateAction
from video_env.actions.zoom import ZoomActionSet
from video_env.backends.base import FrameBatch
from video_env.envs.arguments import EnvArguments
from video_env.envs.base import VideoQAEnv
from video_env.envs.observation_text import zoom_text
from video_env.envs.spaces import (
    ERROR_CHARS,
    MAX_SECONDS,
    QUESTION_CHARS,
    clean_text,
    fraction_to_window,
    fraction_window_space,
    scalar,
    text_space,
    unit_space,
    window_array,
    window_space,
)
from video_env.envs.zoom_rules import BUDGET_PRO, ZoomRules
from video_env.errors import ConfigError, InvalidActionError
from video_env.types import Interval, VideoQA

if TYPE_CHECKING:
    from typing_extensions import Unpack

_CAPTION, _ANSWER = 512, 256
#: Slack on the video's end (a float32 duration read back from an observation).
_END_SLACK_S = 0.01


@dataclass(frozen=True)
class Evaluation:
    """One VLM evaluation of a window: the answer and its confidence."""

    window: Interval
    answer: str
    confidence: float


class ZoomEnv(VideoQAEnv):
    """FALCONEye's search space: evaluate any time windows, zooming in where it pays.

    ## Description
    At reset every level-1 clip (60 s; the last one shorter) is captioned lightly by the
    captioner. The agent then asks the VLM the question on time windows of its choice; how
    many frames and what resolution an evaluation sees depends on the window's length
    (:class:`ZoomRules`: the released FALCONEye code's rule, 2 fps up to 5 s falling in two
    pieces to 0.5 fps at 60 s, at most 256 frames; a pixel budget from 824x1462 at 5 s to
    672x1204 at 60 s), so short windows are seen in more detail. Clip captions sample the
    released code's ``captioning`` rule (0.5 fps, 4 to 32 frames). Each evaluated window
    costs one evaluation of the budget. The agent ends the episode with an answer and the
    window of its evidence.

    ## Action Space
    ``Dict(kind: Discrete(2) [0 evaluate, 1 answer], windows: Box(0, 1,
    (max_windows_per_step, 2)), n_windows: Discrete(max_windows_per_step + 1) [the first
    rows are evaluated; 0 is invalid], answer: Text(256), has_window: Discrete(2), window:
    Box(2))``, windows in fractions of the duration; or the dataclasses ``EvaluateAction``
    and ``AnswerAction`` of :mod:`video_env.actions` (windows in seconds); LLM text goes
    through :class:`~video_env.actions.ZoomActionSet`. A window is legal when
    ``0 <= start < end <= duration`` (an end up to 0.01 s past the video's is moved onto
    it, for float32 durations read back from observations). An evaluate action with an
    illegal window, more windows than ``max_windows_per_step`` or than the budget left is
    invalid, and none of its windows is evaluated.

    ## Observation Space
    ``question``, ``options`` (``"A. ...`` lines, empty for open questions), ``clips``
    (a tuple of ``{"window": float32[2], "caption": Text}``, in time order),
    ``evaluations`` (a tuple of ``{"window", "answer", "confidence": float32[1]}``, most
    recent last), ``budget_left`` (``int64[1]``), ``duration`` (``float32[1]``, seconds),
    ``turn``, ``last_action_error``.

    ## Rewards
    On answering: ``acc`` (1 if correct) + ``gtou`` (``gtou_weight * GToU`` of the answer
    window) + ``cost`` (``-call_cost * evaluations used``). Without a window in the
    answer, the window of the most confident evaluation so far is used (the earliest of
    equals; none if nothing was evaluated). An invalid action gives
    ``-invalid_action_penalty``.

    ## Starting State
    Turn 1 shows the captions of all level-1 clips, no evaluations and the full budget.

    ## Episode End
    Terminated by ``answer``; truncated after more than ``max_invalid_actions`` invalid
    actions. When the budget is spent only ``answer`` is legal. Wrap with ``TimeLimit``
    for a turn limit.

    ## Information
    ``sample_id, turn, last_action_error, invalid_actions, legal_actions, simulated,
    step_cost, budget_left``; on the last step ``episode``: ``answer, correct, score,
    window, gtou, iou, reward, reward_parts (acc, gtou, cost), turns, frames,
    frames_shown, vlm_calls, caption_calls, clip_calls, visual_tokens, invalid_actions,
    ended_by, simulated, explored, trajectory``. ``explored`` tags windows ``caption``
    (reset) or ``evaluate``; ``frames_shown`` stays 0 (the agent sees no frames); the reset's
    captions count in the totals, not in the first step's ``step_cost``.

    ## Arguments
    ``dataset``, ``perception``, ``vlm``, ``captioner``, ``clip``, ``judge``,
    ``max_invalid_actions``,
    ``invalid_action_penalty``, ``standin_missing_videos``, ``render_mode`` (see
    :class:`~video_env.envs.base.VideoQAEnv`); ``rules`` (:class:`ZoomRules`), ``budget``
    (VLM evaluations, default 45 as FALCONEye Pro; 10 for Flash),
    ``max_windows_per_step`` (default 8), ``gtou_weight`` (default 0.5), ``call_cost``
    (subtracted per evaluation used, default 0), ``caption_max_tokens`` (default 64).

    ## Version History
    * v1: ``option_list`` in the observation, the options as a sequence of texts without
      letters (option ``i`` is letter ``i``).
    * v0: initial release (``observation_version=0``).
    """

    kind = "zoom"

    def __init__(
        self,
        dataset: Sequence[VideoQA] | str | None = None,
        *,
        rules: ZoomRules | None = None,
        budget: int = BUDGET_PRO,
        max_windows_per_step: int = 8,
        gtou_weight: float = 0.5,
        call_cost: float = 0.0,
        caption_max_tokens: int = 64,
        **common: Unpack[EnvArguments],
    ) -> None:
        super().__init__(dataset, **common)
        _check_settings(budget, max_windows_per_step, gtou_weight, call_cost, caption_max_tokens)
        self.perception = self.perception.for_roles("vlm", "captioner")
        self.rules = rules or ZoomRules()
        self.budget = budget
        self.max_windows_per_step = max_windows_per_step
        self.gtou_weight = gtou_weight
        self.call_cost = call_cost
        self.caption_max_tokens = caption_max_tokens
        self.action_space = self._make_action_space()
        self.observation_space = self._versioned_space(self._make_observation_space())

    # -- spaces ----------------------------------------------------------------------

    def _make_action_space(self) -> spaces.Dict:
        k = self.max_windows_per_step
        return spaces.Dict(
            {
                "kind": spaces.Discrete(2),
                "windows": spaces.Box(0.0, 1.0, (k, 2), np.float32),
                "n_windows": spaces.Discrete(k + 1),
                "answer": text_space(_ANSWER),
                "has_window": spaces.Discrete(2),
                "window": fraction_window_space(),
            }
        )

    def _make_observation_space(self) -> spaces.Dict:
        clip = spaces.Dict({"window": window_space(), "caption": text_space(_CAPTION)})
        evaluation = spaces.Dict(
            {"window": window_space(), "answer": text_space(_ANSWER), "confidence": unit_space()}
        )
        return spaces.Dict(
            {
                "question": text_space(QUESTION_CHARS),
                "options": text_space(QUESTION_CHARS),
                "clips": spaces.Sequence(clip, stack=False),
                "evaluations": spaces.Sequence(evaluation, stack=False),
                "budget_left": spaces.Box(0, self.budget, (1,), np.int64),
                "duration": spaces.Box(0.0, MAX_SECONDS, (1,), np.float32),
                "turn": spaces.Box(0, np.iinfo(np.int64).max, (1,), np.int64),
                "last_action_error": text_space(ERROR_CHARS),
            }
        )

    # -- episode ---------------------------------------------------------------------

    def _begin(self, sample: VideoQA) -> None:
        duration = self.video.duration
        if duration > MAX_SECONDS:
            raise ConfigError(f"the video lasts {duration:g} s, over the {MAX_SECONDS:g} s bound")
        self.budget_left = self.budget
        self.evaluations: list[Evaluation] = []
        self.clips = self.rules.clips(duration)
        self.captions = [self._caption(clip) for clip in self.clips]

    def _batch(self, window: Interval, n: int | None = None) -> FrameBatch:
        """The frames one look at ``window`` gets (zoom-in sampling; ``n`` frames if given)."""
        n = self.rules.n_frames(window.length) if n is None else n
        return FrameBatch.sample(self.video, window, n, self.rules.resize(window.length))

    def _caption(self, clip: Interval) -> str:
        captioner = self.perception.captioner
        if captioner is None:  # guarded by require() in __init__
            raise ConfigError("the Zoom env needs a captioner")
        batch = self._batch(clip, self.rules.caption_frames(clip.length))
        text = captioner.caption(batch, max_tokens=self.caption_max_tokens)
        self._require_episode_or_done().explore(clip, "caption")
        return clean_text(text, _CAPTION)

    def _evaluate_all(self, windows: list[Interval]) -> list[Evaluation]:
        """Evaluate ``windows``; in batched forward passes when the VLM has them."""
        vlm = self.perception.vlm
        if vlm is None:  # guarded by require() in __init__
            raise ConfigError("the Zoom env needs a VLM")
        sample = self.sample
        batches = [self._batch(w) for w in windows]
        answer_batch = getattr(vlm, "answer_batch", None)
        if callable(answer_batch) and len(batches) > 1:
            replies = list(answer_batch(batches, sample.question, sample.options))
        else:
            replies = [vlm.answer(b, sample.question, sample.options) for b in batches]
        evaluations = []
        for window, batch, reply in zip(windows, batches, replies, strict=True):
            self._require_episode_or_done().reading(reply.text, reply.confidence, self.judge)
            self._require_episode_or_done().explore(window, "evaluate")
            self._last_times = np.asarray(batch.times, dtype=np.float64).copy()
            confidence = min(max(float(reply.confidence), 0.0), 1.0)
            evaluations.append(Evaluation(window, clean_text(reply.text, _ANSWER), confidence))
        return evaluations

    # -- actions ---------------------------------------------------------------------

    def _coerce(self, action: Any) -> Action:
        if isinstance(action, EvaluateAction):
            if not isinstance(action.windows, (tuple, list)) or not all(
                isinstance(w, Interval) for w in action.windows
            ):
                raise TypeError(f"evaluate windows are a tuple of Interval, got {action.windows!r}")
            return action
        if isinstance(action, AnswerAction):
            if not isinstance(action.text, str):
                raise TypeError(f"answer text must be a str, got {type(action.text).__name__}")
            return replace(action, window=self._snap(action.window))
        if not isinstance(action, dict):
            raise TypeError(
                f"Zoom actions are EvaluateAction, AnswerAction or an action_space dict, "
                f"got {type(action).__name__}"
            )
        kind = int(action["kind"])
        if kind == 0:
            return self._evaluate_from_dict(action)
        if kind != 1:
            raise InvalidActionError(f"kind must be 0 (evaluate) or 1 (answer), got {kind}")
        return self._answer_from_dict(action)

    def _evaluate_from_dict(self, action: dict[str, Any]) -> EvaluateAction:
        """The first ``n_windows`` rows of ``windows`` (fractions of the duration)."""
        rows = _rows(action["windows"])
        n = int(action["n_windows"])
        most = min(len(rows), self.max_windows_per_step)  # the space's, not the array's
        if not 1 <= n <= most:
            raise InvalidActionError(f"n_windows must be between 1 and {most}, got {n}")
        duration = self.video.duration
        return EvaluateAction(tuple(fraction_to_window(row, duration) for row in rows[:n]))

    def _snap(self, window: Interval | None) -> Interval | None:
        """``window`` with an end just past the video's (float32 rounding) moved onto it."""
        duration = self.video.duration
        if window is None or window.start > duration:
            return window
        if not duration < window.end <= duration + _END_SLACK_S:
            return window
        return Interval(window.start, duration)

    def _act(self, action: Action) -> float:
        if not isinstance(action, EvaluateAction):
            raise TypeError(f"not a Zoom action: {action!r}")
        windows = self._checked_windows(action)
        self.budget_left -= len(windows)
        self.evaluations.extend(self._evaluate_all(windows))
        return 0.0

    def _checked_windows(self, action: EvaluateAction) -> list[Interval]:
        """The windows of an evaluate action, snapped; raise if any rule is broken."""
        count = len(action.windows)
        if self.budget_left <= 0:
            raise InvalidActionError(
                f"the evaluation budget ({self.budget}) is spent: only answer is legal"
            )
        if count == 0:
            raise InvalidActionError("evaluate needs at least one window")
        if count > self.max_windows_per_step:
            raise InvalidActionError(
                f"at most {self.max_windows_per_step} windows per evaluate, got {count}"
            )
        if count > self.budget_left:
            raise InvalidActionError(
                f"{count} windows requested but only {self.budget_left} evaluations are left"
            )
        return [self._legal_window(w) for w in action.windows]

    def _legal_window(self, window: Interval) -> Interval:
        snapped = self._snap(window)
        duration = self.video.duration
        if snapped is None or snapped.end > duration:
            raise InvalidActionError(
                f"window [{window.start:g}, {window.end:g}] lies outside the video "
                f"(0 to {duration:g} s)"
            )
        if snapped.length <= 0:
            raise InvalidActionError(
                f"window [{window.start:g}, {window.end:g}] is empty: start must be < end"
            )
        return snapped

    def _answer_reward(self, action: AnswerAction) -> dict[str, float]:
        used = self.budget - self.budget_left
        return self._search_reward(action, self.gtou_weight, self.call_cost * used)

    def _answer_window(self, action: AnswerAction) -> Interval | None:
        """The given window, else that of the most confident evaluation (or ``None``)."""
        if action.window is not None:
            return action.window
        # max() keeps the first of equals: the earliest evaluation wins ties.
        best = max(self.evaluations, key=lambda e: e.confidence, default=None)
        return best.window if best is not None else None

    def _legal_kinds(self) -> list[str]:
        return ["evaluate", "answer"] if self.budget_left > 0 else ["answer"]

    # -- observation -----------------------------------------------------------------

    def _kind_observation(self) -> dict[str, Any]:
        return {
            "clips": tuple(
                {"window": window_array(clip), "caption": caption}
                for clip, caption in zip(self.clips, self.captions, strict=True)
            ),
            "evaluations": tuple(
                {
                    "window": window_array(e.window),
                    "answer": e.answer,
                    "confidence": scalar(e.confidence),
                }
                for e in self.evaluations
            ),
            "budget_left": np.array([self.budget_left], dtype=np.int64),
            "duration": scalar(self.video.duration),
        }

    def text_action_set(self) -> ZoomActionSet:
        """``evaluate([start, end], ...)`` and ``answer(...)`` (:class:`ZoomActionSet`)."""
        return ZoomActionSet()

    def observation_text(self, observation: dict[str, Any]) -> str:
        """The clips' captions, the evaluations so far and the budget, as text."""
        return zoom_text(observation)

    def _info(self) -> dict[str, Any]:
        info = super()._info()
        info["budget_left"] = getattr(self, "budget_left", self.budget)
        return info

    def _current_window(self) -> Interval | None:
        evaluations = getattr(self, "evaluations", [])
        return evaluations[-1].window if evaluations else None

    def _ansi_lines(self) -> list[str]:
        head = f"{len(self.clips)} clips captioned, budget {self.budget_left} of {self.budget} left"
        return [head] + [
            f"[{e.window.start:.1f}, {e.window.end:.1f}] s: {e.answer} ({e.confidence:.2f})"
            for e in self.evaluations[-3:]
        ]


def _rows(value: Any) -> npt.NDArray[np.float64]:
    """``value`` as ``float64[N, 2]`` rows of ``[start, end]``.

    Raises:
        TypeError: If it is not numeric or not made of pairs (a programming error).
    """
    try:
        return np.asarray(value, dtype=np.float64).reshape(-1, 2)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"windows must be numeric [start, end] pairs, got {value!r}") from exc


def _check_settings(
    budget: int, per_step: int, gtou_weight: float, call_cost: float, caption_tokens: int
) -> None:
    """Raise :class:`ConfigError` for out-of-range constructor settings."""
    checks = {
        "budget must be >= 0": budget >= 0,
        "max_windows_per_step must be >= 1": per_step >= 1,
        "gtou_weight must be finite and >= 0": math.isfinite(gtou_weight) and gtou_weight >= 0,
        "call_cost must be finite and >= 0": math.isfinite(call_cost) and call_cost >= 0,
        "caption_max_tokens must be >= 1": caption_tokens >= 1,
    }
    failed = [rule for rule, ok in checks.items() if not ok]
    if failed:
        raise ConfigError("; ".join(failed))
