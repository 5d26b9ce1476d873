"""The prompts of FALCONEye's LLM steps: summary, reasoning, decision and final answer.

Each fills a template of ``policies/prompts/falconeye/`` from the state of the search;
:class:`~policies.falconeye.FalconEyePolicy` sends it through its JSON caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from policies import prompts
from policies.falconeye_steps import Context, format_evaluations
from policies.observations import Caption, Evaluation, format_captions

#: The decision step's choices; the first only where the step may answer.
ANSWER_CHOICE = (
    '- "answer": a response answers the question completely and its confidence '
    "and window support it; give final_answer and window."
)
ZOOM_CHOICE = (
    '- "zoom": some windows are promising but not conclusive; list in "zoom" any '
    "number of them, each will be split into shorter windows seen in more detail."
)
REASON_CHOICE = (
    '- "reason": no window is worth exploring more deeply; new clips will be chosen '
    "from the captions."
)


def _render(template: str, c: Context, summary: str, **fields: Any) -> str:
    """``template`` filled with the duration, the summary, the question and its options."""
    return prompts.render(
        template,
        duration=f"{c.duration:.0f}",
        summary=summary or "(none)",
        question=c.question,
        options_block=prompts.options_block(c.options),
        **fields,
    )


def summary_prompt(captions: Sequence[Caption], duration: float) -> str:
    """The question-independent summary of a video, from its captions alone."""
    return prompts.render(
        "falconeye/summary", duration=f"{duration:.0f}", captions=format_captions(captions)
    )


def reasoning_prompt(c: Context, summary: str, fresh: Sequence[Caption], n_candidates: int) -> str:
    """The reasoning step: up to ``n_candidates`` clips among the unexplored ``fresh``."""
    return _render(
        "falconeye/reasoning",
        c,
        summary,
        captions=format_captions(fresh),
        n_candidates=n_candidates,
    )


def decision_prompt(
    c: Context,
    summary: str,
    shown: Sequence[Evaluation],
    zoomable: Sequence[Evaluation],
    allow_answer: bool,
) -> str:
    """The decision step: answer (if ``allow_answer``), zoom or reason, seeing ``shown``."""
    choices = [ANSWER_CHOICE] if allow_answer else []
    return _render(
        "falconeye/decision",
        c,
        summary,
        evaluations=format_evaluations(shown, c.captions),
        zoomable=", ".join(f"[{e.window.start:.0f}, {e.window.end:.0f}]" for e in zoomable)
        or "none",
        budget_left=c.budget,
        threshold=c.threshold,
        choices="\n".join([*choices, ZOOM_CHOICE, REASON_CHOICE]),
    )


def final_prompt(c: Context, summary: str) -> str:
    """The final decision: the answer from every evaluation."""
    return _render(
        "falconeye/final", c, summary, evaluations=format_evaluations(c.done, c.captions)
    )
