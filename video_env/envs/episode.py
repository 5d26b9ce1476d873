"""Per-episode bookkeeping shared by the environments: costs, exploration, the record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from video_env.envs.perception import Perception
from video_env.metrics.cost import Cost
from video_env.metrics.judges import Grade, Judge, grade_answer
from video_env.metrics.localization import gtou, iou
from video_env.provenance import (
    SENSORS_ON_REAL,
    STANDIN,
    STANDIN_NOTE,
    record_flags,
)
from video_env.synth.annotated import AnnotatedVideo
from video_env.synth.world import SynthVideo
from video_env.types import Interval, VideoQA
from video_env.video.base import VideoReader

#: Steps an episode record's trajectory keeps (the first ones; the rest are counted in
#: ``trajectory_omitted``). Each step's action and error are at most 1 KB, so a record
#: stays well under 1 MB whatever the actions.
MAX_RECORDED_STEPS = 200


@dataclass
class StepRecord:
    """One step of a trajectory (kept compact for logs)."""

    action: str
    reward: float
    error: str
    cost: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "action": self.action,
            "reward": self.reward,
            "error": self.error,
            "cost": self.cost,
        }


@dataclass
class EpisodeTracker:
    """Tracks one episode: turns, invalid actions, explored windows and perception costs.

    Args:
        sample: The episode's sample (never shown to policies).
        perception: The env's backends; their usage is snapshotted at the start.
        standin: Whether the video is a simulated stand-in of a missing file, frames
            included (the episode is then labelled simulated, whatever the backends).
        sensors_on_real: Whether simulated backends answer from the annotations of a
            real file whose frames the env shows (labelled simulated too).
    """

    sample: VideoQA
    perception: Perception
    standin: bool = False
    sensors_on_real: bool = False
    turns: int = 0
    invalid_actions: int = 0
    explored: list[tuple[Interval, str]] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    frames_shown: int = 0
    vlm_readings: list[tuple[float, bool | None]] = field(default_factory=list)
    done: bool = False
    judge_errors: list[str] = field(default_factory=list)
    _start_usage: Cost = field(default_factory=Cost)
    _last_usage: Cost = field(default_factory=Cost)

    def __post_init__(self) -> None:
        self._start_usage = self._last_usage = self.perception.usage()

    @classmethod
    def start(cls, sample: VideoQA, perception: Perception, video: VideoReader) -> EpisodeTracker:
        """The tracker of an episode on ``video`` (what ``perception.video_for`` gave)."""
        standin = isinstance(video, SynthVideo) and not isinstance(sample.video, SynthVideo)
        on_real = isinstance(video, AnnotatedVideo)
        return cls(sample, perception, standin=standin, sensors_on_real=on_real)

    @property
    def labels(self) -> frozenset[str]:
        """Its perception's provenance labels (:mod:`video_env.provenance`), video's too."""
        video = {STANDIN} if self.standin else set()
        video |= {SENSORS_ON_REAL} if self.sensors_on_real else set()
        return self.perception.labels | video

    @property
    def video_note(self) -> str | None:
        """What the env must warn about its video (stand-in or simulated sensors), if any."""
        if self.standin:
            return f"sample {self.sample.id} {STANDIN_NOTE}"
        if self.sensors_on_real:
            return (
                f"{SENSORS_ON_REAL}: the frames are decoded from the file, but the simulated "
                "backends answer from the sample's annotations (evidence windows, answer, "
                "options), not from the frames"
            )
        return None

    def explore(self, window: Interval, kind: str) -> None:
        """Record that ``window`` was looked at (``kind``: forward, rewatch, evaluate...)."""
        self.explored.append((window, kind))

    def reading(self, answer: str, confidence: float, judge: Judge | None = None) -> None:
        """Record a VLM answer and its confidence, graded (for reliability diagrams only)."""
        grade = self.grade(answer, judge)
        self.vlm_readings.append((float(confidence), grade.correct if grade else None))

    def grade(self, answer: str | None, judge: Judge | None) -> Grade | None:
        """Grade an answer; a judge that fails is recorded (``judge_errors``), not raised.

        Returns ``None`` for a sample without a known answer or a judgement that raised
        (the episode is then ungraded); a judge that counts a failure as wrong returns
        its grade, and its error is recorded too.
        """
        from video_env.metrics.llm_judge import JudgeError

        try:
            grade = grade_answer(self.sample, answer, judge)
        except JudgeError as exc:
            self.judge_errors.append(str(exc))
            return None
        if grade is not None and grade.error is not None:  # counted as wrong, still recorded
            self.judge_errors.append(grade.error)
        return grade

    def step_cost(self) -> Cost:
        """Perception cost since the previous call."""
        now = self.perception.usage()
        delta = now - self._last_usage
        self._last_usage = now
        return delta

    def restart_usage(self) -> None:
        """Count perception usage from now on only.

        What was spent before is not the episode's: a Tools preset's caption index, built
        once per video, is reported apart (``info["episode"]["index"]``).
        """
        self._start_usage = self._last_usage = self.perception.usage()

    def record(self, action: str, reward: float, error: str, cost: Cost) -> None:
        """Append a step to the trajectory."""
        self.turns += 1
        self.steps.append(StepRecord(action, reward, error, cost.to_dict()))

    def total_cost(self) -> Cost:
        """Perception cost of the whole episode so far.

        Wall time is left out on purpose: Gymnasium requires ``info`` to be deterministic
        for a seed, and the episode runner measures wall time around the whole loop
        (policy included).
        """
        return self.perception.usage() - self._start_usage

    def finish(
        self,
        answer: str | None,
        window: Interval | None,
        reward_parts: dict[str, float],
        judge: Judge | None,
        ended_by: str,
    ) -> dict[str, Any]:
        """Grade the answer and build ``info["episode"]``."""
        self.done = True
        grade = self.grade(answer, judge)
        gt = self.sample.gt_intervals
        cost = self.total_cost()
        record: dict[str, Any] = {
            "sample_id": self.sample.id,
            "answer": answer,
            "correct": grade.correct if grade is not None else None,
            "score": grade.score if grade is not None else None,
            "window": window.to_list() if window is not None else None,
            "gtou": gtou(gt, window) if gt else None,
            "iou": iou(gt, window) if gt else None,
            "reward": float(sum(reward_parts.values())),
            "return": float(sum(s.reward for s in self.steps)),
            "reward_parts": reward_parts,
            "turns": self.turns,
            "frames": cost.frames,
            "frames_shown": self.frames_shown,
            "vlm_calls": cost.vlm_calls,
            "caption_calls": cost.caption_calls,
            "clip_calls": cost.clip_calls,
            "visual_tokens": cost.visual_tokens,
            "perception_money_usd": cost.money_usd,
            "invalid_actions": self.invalid_actions,
            "ended_by": ended_by,
            **record_flags(self.labels),
            "explored": [[w.start, w.end, kind] for w, kind in self.explored],
            "vlm_readings": [[c, ok] for c, ok in self.vlm_readings],
            "trajectory": [s.to_dict() for s in self.steps[:MAX_RECORDED_STEPS]],
        }
        if len(self.steps) > MAX_RECORDED_STEPS:  # the record stays bounded (turns is exact)
            record["trajectory_omitted"] = len(self.steps) - MAX_RECORDED_STEPS
        if self.judge_errors:  # ungraded (correct None) or counted wrong; the run goes on
            record["judge_error"] = self.judge_errors[-1]
            record["judge_errors"] = len(self.judge_errors)
        return record
