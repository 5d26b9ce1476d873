"""What a DAPO run shows of each step: a line on the console and TensorBoard scalars."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from policies.training.dapo_step import StepStats

__all__ = ["describe_step", "tensorboard_writer"]


def describe_step(s: StepStats) -> str:
    """The step's console line: the update, the rollouts, and the seconds of each phase."""
    played = (
        f"rollouts: reward {s.drawn_reward:.3f}, accuracy {s.accuracy:.2f}, format-valid "
        f"{s.format_valid:.2f}, {s.turns:.1f} turns, rewatch {s.rewatch_rate:.2f}"
    )
    phases = (
        f"rollouts {s.rollout_s:.1f} s, reference {s.reference_s:.1f} s, forward "
        f"{s.forward_s:.1f} s, backward {s.backward_s:.1f} s"
    )
    if not s.groups:
        return (
            f"step {s.step}: no group kept in {s.drawn} draws (dynamic sampling); {played}; "
            f"{phases}"
        )
    return (
        f"step {s.step}: {s.groups} groups ({s.dropped} dropped of {s.drawn}), reward "
        f"{s.mean_reward:.3f}, loss {s.loss:.4f}, kl {s.kl:.4f}, clipped "
        f"{s.clip_low:.2%}/{s.clip_high:.2%}, {s.tokens} tokens, {s.seconds:.1f} s; {played}; "
        f"{phases}"
    )


def tensorboard_writer(folder: Path, purge_step: int | None = None) -> Any:
    """A TensorBoard writer into ``folder``, or ``None`` without the ``tensorboard`` package.

    ``purge_step``: a resumed run's first step; events logged from it on are dropped.
    """
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # the rl extra brings it
        return None
    return SummaryWriter(str(folder), purge_step=purge_step)
