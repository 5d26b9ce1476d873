"""One DAPO optimisation step and what a step logs: the scoring of replies, the loss, stats.

:func:`dapo_step` scores every reply token of a batch of groups under the policy, the
sampling policy (``old``) and the frozen reference, then for ``ppo_epochs`` passes
accumulates the gradient of each group's token-normalised loss (Eqs. (4)–(6)) and takes one
optimiser step. Turns are encoded one at a time (:func:`reply_logprobs`), so memory holds
one turn's activations, whatever the trajectory length; a turn's reply is scored as the
token ids the rollout sampled, not its text re-tokenised. :class:`StepStats` is one line of
a run's ``log.jsonl``, with the seconds of each phase (rollouts, reference pass, the
policy's forward and backward passes).

Where the models share a :class:`~video_env.backends.vision_cache.VisionFeatureCache`
(``train_rl`` installs one), the vision tower's frozen blocks encode each frame batch
once per step: the rollouts', the reference's and the policy's passes take the same
features. With ``beta == 0`` there is no reference pass.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from policies.training.dapo import (
    DAPOSettings,
    dapo_loss,
    group_advantages,
)
from policies.training.episodes import format_valid, rewatch_rate
from policies.training.rollout import Trajectory
from policies.training.turn_inputs import TurnExample, collate_turns
from video_env._optional import require

__all__ = ["StepStats", "dapo_step", "reply_logprobs", "reply_tokens", "rollout_metrics"]

_PURPOSE = "DAPO training of the VideoScout policy"


@dataclass(frozen=True)
class StepStats:
    """What one optimisation step did (one row of ``log.jsonl``).

    ``mean_reward`` is over the kept groups' trajectories (what the update saw); the
    fields of :data:`ROLLOUT_METRICS` are over every group drawn in the step.
    """

    step: int
    groups: int
    drawn: int
    dropped: int
    mean_reward: float
    loss: float
    kl: float
    clip_low: float
    clip_high: float
    tokens: int
    seconds: float
    drawn_reward: float = 0.0
    accuracy: float = 0.0
    format_valid: float = 0.0
    turns: float = 0.0
    rewatch_rate: float = 0.0
    rollout_s: float = 0.0
    reference_s: float = 0.0
    forward_s: float = 0.0
    backward_s: float = 0.0


#: The phases whose seconds a step logs (each a :class:`StepStats` field); ``dapo_step``
#: returns the last three.
PHASES = ("rollout_s", "reference_s", "forward_s", "backward_s")


#: What :func:`rollout_metrics` measures (each also a :class:`StepStats` field).
ROLLOUT_METRICS = ("drawn_reward", "accuracy", "format_valid", "turns", "rewatch_rate")


def rollout_metrics(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """How the policy played in a step's rollouts: every group drawn, kept or not.

    ``drawn_reward`` and ``accuracy`` are means over episodes, ``format_valid`` the share
    of turns whose reply is a complete Think-Act reply with a parsable action, ``turns``
    the mean turns per episode, and ``rewatch_rate`` the share of explored windows that
    were rewatches.
    """
    if not trajectories:
        return dict.fromkeys(ROLLOUT_METRICS, 0.0)
    replies = [turn.reply for t in trajectories for turn in t.turns]
    explored = [entry for t in trajectories for entry in t.record.get("explored") or []]
    n = len(trajectories)
    return {
        "drawn_reward": sum(t.reward for t in trajectories) / n,
        "accuracy": sum(t.correct for t in trajectories) / n,
        "format_valid": sum(map(format_valid, replies)) / len(replies) if replies else 0.0,
        "turns": len(replies) / n,
        "rewatch_rate": rewatch_rate(explored),
    }


def reply_logprobs(
    model: Any, processor: Any, turn: TurnExample, temperature: float, *, masked: bool = False
) -> Any:
    """Log-probabilities of the reply's tokens (``float[n]``) under ``model``.

    Only the last ``n + 1`` positions' logits are computed (the reply ends the sequence),
    divided by the sampling temperature as when the reply was drawn. With ``masked`` and
    a turn sampled under a pattern (``turn.pattern``), each position's distribution is
    the guided one the rollout sampled from: the tokens the pattern forbade there are
    masked before the softmax (:func:`~video_env.backends.hf_pattern_guide.pattern_masked_logits`).
    """
    batch = collate_turns(processor, [turn])
    device = next(model.parameters()).device
    batch = {k: v.to(device) if hasattr(v, "to") else v for k, v in batch.items()}
    labels = batch.pop("labels")
    n = int((labels != -100).sum())
    out = model(**batch, logits_to_keep=n + 1)
    logits = out.logits[:, :-1].float() / temperature
    targets = labels[:, -n:]
    if masked and turn.pattern is not None:
        from video_env.backends.hf_generation import eos_ids
        from video_env.backends.hf_pattern_guide import pattern_masked_logits

        eos = eos_ids(model, processor)
        logits = pattern_masked_logits(
            logits[0], processor.tokenizer, turn.pattern, targets[0].tolist(), sorted(eos)
        )[None]
    return logits.log_softmax(-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)[0]


def reply_tokens(processor: Any, turn: TurnExample) -> int:
    """How many tokens of ``turn``'s sequence carry loss (:meth:`TurnExample.loss_ids`)."""
    return len(turn.loss_ids(processor.tokenizer))


def dapo_step(
    model: Any,
    reference: Any | None,
    processor: Any,
    optimizer: Any,
    groups: Sequence[Sequence[Trajectory]],
    settings: DAPOSettings,
    *,
    temperature: float = 1.0,
    ppo_epochs: int = 1,
    max_grad_norm: float = 1.0,
    mask_truncated: bool = False,
    score_guided: bool = False,
) -> dict[str, float]:
    """One DAPO update on ``groups`` (each: the G trajectories of one question).

    With ``mask_truncated`` (overlong filtering) a trajectory with a reply cut by the token
    cap keeps its place in the group's advantages but adds no loss and no tokens. With
    ``score_guided``, turns sampled under a pattern are scored under the guided
    distribution (policy, old policy and reference alike; :func:`reply_logprobs`).

    Returns:
        The mean loss over groups (of the last pass), KL, clip fractions and token count,
        and the seconds of the reference pass (with the old policy's, when
        ``ppo_epochs > 1``), of the policy's forward passes and of their backward passes.
    """
    torch = require("torch", "models", _PURPOSE)
    clock = {"reference_s": 0.0, "forward_s": 0.0, "backward_s": 0.0}
    scoring = time.perf_counter()
    # one pass is on-policy: the sampling policy is the current one, so its log-probs are
    # the first pass's own (detached) rather than a separate forward pass of each turn
    on_policy = ppo_epochs == 1
    prepared = []
    for group in groups:
        advantages = group_advantages(
            torch.tensor([t.reward for t in group], dtype=torch.float32), settings.std_eps
        )
        turns = []
        with torch.no_grad():
            for i, trajectory in enumerate(group):
                if mask_truncated and trajectory.truncated:
                    continue
                for turn in trajectory.turns:
                    old = (
                        None
                        if on_policy
                        else reply_logprobs(
                            model, processor, turn, temperature, masked=score_guided
                        )
                    )
                    ref = (
                        reply_logprobs(reference, processor, turn, temperature, masked=score_guided)
                        if reference is not None and settings.beta > 0
                        else None
                    )
                    n = reply_tokens(processor, turn) if old is None else int(old.numel())
                    turns.append((turn, i, old, ref, n))
        tokens = sum(n for *_, n in turns)
        prepared.append((advantages, turns, max(tokens, 1)))
    clock["reference_s"] = time.perf_counter() - scoring
    totals: dict[str, float] = {}
    for _ in range(ppo_epochs):
        optimizer.zero_grad()
        totals = {"loss": 0.0, "kl": 0.0, "clip_low": 0.0, "clip_high": 0.0, "tokens": 0.0}
        for advantages, turns, n_group in prepared:
            for turn, i, old, ref, _ in turns:
                forward = time.perf_counter()
                logp = reply_logprobs(model, processor, turn, temperature, masked=score_guided)
                behaviour = logp.detach() if old is None else old
                out = dapo_loss(
                    logp[None],
                    behaviour[None],
                    None if ref is None else ref[None],
                    advantages[i : i + 1],
                    torch.ones_like(behaviour)[None],
                    settings,
                )
                # Eq. (5)'s normalisation: this turn's token sum over the group's tokens
                weight = out.tokens / n_group / len(prepared)
                backward = time.perf_counter()
                clock["forward_s"] += backward - forward
                (out.loss * weight).backward()  # type: ignore[no-untyped-call]
                clock["backward_s"] += time.perf_counter() - backward
                totals["loss"] += float(out.loss.detach()) * weight
                totals["kl"] += out.kl * weight
                totals["clip_low"] += out.clip_low_fraction * weight
                totals["clip_high"] += out.clip_high_fraction * weight
                totals["tokens"] += out.tokens
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
    return {**totals, **clock}
