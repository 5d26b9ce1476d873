"""Which distilled episodes can be training examples: the checks of :func:`validate`."""

from __future__ import annotations

import re

from policies.training.episodes import EpisodeRun
from video_env.metrics.answers import extract_option, normalize_text
from video_env.types import VideoQA

__all__ = ["validate"]

_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
_ACTION = re.compile(r"<action>(.*?)</action>", re.DOTALL)
_ANSWER_ARG = re.compile(r"answer\(\s*(?:\"([^\"]*)\"|'([^']*)'|([^,)\s]+))", re.DOTALL)


def validate(run: EpisodeRun, sample: VideoQA) -> list[str]:
    """Why an episode cannot be a training example (an empty list: it can).

    Checks: it answered (not abandoned or out of error allowance), correctly, with legal
    actions only (no invalid turn), no reply cut by the token cap, non-empty reasoning in
    every turn, and the final answer agreeing with the conclusion of its reasoning.
    """
    record = run.record
    reasons: list[str] = []
    if record.get("error") or record.get("ended_by") != "answer":
        reasons.append("no answer")
    elif not record.get("correct"):
        reasons.append("wrong answer")
    if int(record.get("invalid_actions") or 0) > 0:
        reasons.append("illegal action")
    if any(t.finish_reason == "length" for t in run.turns):
        reasons.append("truncated reply")
    if any(not _reasoning(t.reply) for t in run.turns):
        reasons.append("empty reasoning")
    if run.turns and not reasons and not _answer_matches_conclusion(run.turns[-1].reply, sample):
        reasons.append("answer does not match the reasoning")
    return reasons


def _reasoning(reply: str) -> str:
    match = _THINK.search(reply)
    return match.group(1).strip() if match else ""


def _answer_matches_conclusion(reply: str, sample: VideoQA) -> bool:
    action = _ACTION.search(reply)
    argument = _ANSWER_ARG.search(action.group(1) if action else reply)
    if argument is None:
        return False
    answer = next((g for g in argument.groups() if g is not None), "").strip()
    thought = _reasoning(reply)
    if sample.options:
        concluded = extract_option(thought, sample.options)
        given = extract_option(answer, sample.options)
        return concluded is not None and concluded == given
    wanted = normalize_text(answer)
    return bool(wanted) and wanted in normalize_text(thought)
