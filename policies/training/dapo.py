"""DAPO's loss as small pure torch functions (VideoScout's RL stage).

Equation numbers follow the training section as the issue cites it:

- Eq. (4): the group-relative advantage ``A_i = (R_i - mean(R)) / std(R)`` over the ``G``
  trajectories sampled for one question, shared by every token of trajectory ``i``.
- Eq. (5): the decoupled clipped surrogate
  ``min(r_t A, clip(r_t, 1 - eps_low, 1 + eps_high) A)`` with ``r_t = pi(o_t) / pi_old(o_t)``,
  summed over every generated token of the group and divided by the group's total token
  count (token-level normalisation, not a mean of per-sequence means).
- Eq. (6): the low-variance k3 estimator of ``KL(pi || pi_ref)`` per token,
  ``exp(ref - logp) - (ref - logp) - 1``, weighted by ``beta`` and subtracted from the
  surrogate.

Dynamic sampling keeps sampling until the batch is full and drops, by default, the groups
whose trajectories are *all correct or all incorrect* (VideoScout's rule,
:func:`group_has_mixed_outcomes`); DAPO's own filter, which drops groups whose *rewards*
are all equal (:func:`group_is_informative`), is a setting: with the format and timing
terms an all-correct group has unequal rewards and survives it.

Overlong handling (DAPO §3.4): the soft overlong punishment
(:func:`overlong_penalty`, DAPO's Eq. 13, ``R_length`` in ``[-1, 0]`` over the last
``buffer`` tokens before the cap) added to a trajectory's reward, or overlong filtering
(the loss of a truncated trajectory is masked); see :class:`~policies.training.rl.DAPOConfig`.

Every function takes tensors and returns tensors; nothing here knows about models or envs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from video_env.errors import ConfigError

if TYPE_CHECKING:
    import torch

__all__ = [
    "DAPOSettings",
    "DapoLoss",
    "clipped_surrogate",
    "dapo_loss",
    "fill_batch",
    "group_advantages",
    "group_has_mixed_outcomes",
    "group_is_informative",
    "k3_kl",
    "overlong_penalty",
]

T = TypeVar("T")


@dataclass(frozen=True)
class DAPOSettings:
    """DAPO's hyper-parameters; the defaults are the VideoScout paper's.

    Attributes:
        eps_low: Lower clip ``1 - eps_low`` of the ratio.
        eps_high: Upper clip ``1 + eps_high`` (decoupled: larger, "clip-higher").
        beta: Weight of the k3 KL term against the frozen reference. 0 drops the term
            and with it the reference: no reference model is loaded and no reference
            pass runs (DAPO's own setting; about a quarter of a step's time). The default
            keeps VideoScout's 0.01.
        std_eps: Added to the group's reward std in Eq. (4).
    """

    eps_low: float = 0.20
    eps_high: float = 0.28
    beta: float = 0.01
    std_eps: float = 1e-6

    def __post_init__(self) -> None:
        if not (0 <= self.eps_low < 1 and self.eps_high >= 0 and self.beta >= 0):
            raise ConfigError("need 0 <= eps_low < 1, eps_high >= 0 and beta >= 0")


def group_advantages(rewards: torch.Tensor, std_eps: float = 1e-6) -> torch.Tensor:
    """Eq. (4): ``A_i = (R_i - mean R) / (std R + std_eps)`` for one group of ``G`` rewards.

    ``std`` is the population standard deviation of the group (divided by ``G``). A group
    whose rewards are all equal gets zero advantages (dynamic sampling drops it anyway).

    Args:
        rewards: ``float[G]``, one trajectory's total reward each.
        std_eps: Added to the standard deviation (no division by zero).

    Returns:
        ``float[G]``: one advantage per trajectory, shared by all its tokens.
    """
    if rewards.dim() != 1 or rewards.numel() < 1:
        raise ValueError(
            f"rewards must be a non-empty 1-D tensor, got shape {tuple(rewards.shape)}"
        )
    centred = rewards - rewards.mean()
    return centred / (rewards.std(unbiased=False) + std_eps)


def group_is_informative(rewards: Sequence[float] | torch.Tensor) -> bool:
    """DAPO's equal-reward filter: keep a group only if its rewards are not all equal."""
    values = [float(r) for r in rewards]
    return len(values) > 1 and max(values) > min(values)


def group_has_mixed_outcomes(correct: Sequence[bool | None]) -> bool:
    """VideoScout's filter: keep a group only if it is neither all correct nor all wrong.

    ``None`` (an episode that never answered, or was not graded) counts as incorrect.
    """
    outcomes = [bool(c) for c in correct]
    return any(outcomes) and not all(outcomes)


def overlong_penalty(tokens: int, max_tokens: int, buffer: int, factor: float = 1.0) -> float:
    """DAPO's soft overlong punishment (Eq. 13) of a reply of ``tokens`` tokens.

    ``0`` up to ``max_tokens - buffer``; then linear down to ``-factor`` at ``max_tokens``;
    ``-factor`` beyond (a reply cut by the cap).

    Raises:
        ConfigError: Unless ``0 < buffer <= max_tokens`` and ``factor >= 0``.
    """
    if not (0 < buffer <= max_tokens) or factor < 0:
        raise ConfigError("need 0 < buffer <= max_tokens and factor >= 0")
    free = max_tokens - buffer
    if tokens <= free:
        return 0.0
    if tokens <= max_tokens:
        return factor * (free - tokens) / buffer
    return -factor


def clipped_surrogate(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    eps_low: float = 0.20,
    eps_high: float = 0.28,
) -> torch.Tensor:
    """Eq. (5), per token: ``min(r A, clip(r, 1 - eps_low, 1 + eps_high) A)``.

    Args:
        logp: ``float[G, T]`` log-probabilities of the generated tokens under the policy.
        old_logp: ``float[G, T]`` the same under the policy that sampled them (no grad).
        advantages: ``float[G]`` (Eq. (4)), broadcast over each trajectory's tokens.
        eps_low: Lower clip of the ratio, ``1 - eps_low``.
        eps_high: Upper clip of the ratio, ``1 + eps_high``.

    Returns:
        ``float[G, T]``: the per-token surrogate (to be maximised).
    """
    ratio = (logp - old_logp).exp()
    adv = advantages.unsqueeze(-1) if advantages.dim() == 1 else advantages
    clipped = ratio.clamp(1.0 - eps_low, 1.0 + eps_high)
    return (ratio * adv).minimum(clipped * adv)


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Eq. (6), per token: ``exp(ref - logp) - (ref - logp) - 1`` (≥ 0, 0 when equal)."""
    delta = ref_logp - logp
    return delta.exp() - delta - 1.0


@dataclass(frozen=True)
class DapoLoss:
    """The loss and what to log about it (all scalars are detached except ``loss``)."""

    loss: torch.Tensor
    surrogate: float
    kl: float
    clip_low_fraction: float
    clip_high_fraction: float
    tokens: int


def dapo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    ref_logp: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    settings: DAPOSettings | None = None,
) -> DapoLoss:
    """Eqs. (5)–(6) for one group: ``-sum_t mask (surrogate - beta KL) / sum_t mask``.

    The sum runs over every generated token of every trajectory in the group and is divided
    by the group's total number of generated tokens, so long trajectories weigh in by their
    length (DAPO's token-level normalisation).

    Args:
        logp: ``float[G, T]`` the policy's log-probabilities (with grad).
        old_logp: ``float[G, T]`` the sampling policy's (no grad).
        ref_logp: ``float[G, T]`` the frozen reference's, or ``None`` when ``beta`` is 0.
        advantages: ``float[G]`` (Eq. (4)).
        mask: ``[G, T]``, 1 for generated tokens, 0 for padding.
        settings: Clip range and ``beta`` (default: the paper's).

    Returns:
        The loss to minimise and logging statistics.
    """
    cfg = settings or DAPOSettings()
    if logp.shape != old_logp.shape or logp.shape != mask.shape:
        raise ValueError("logp, old_logp and mask must have the same shape")
    weights = mask.to(logp.dtype)
    tokens = weights.sum().clamp(min=1.0)
    surrogate = clipped_surrogate(logp, old_logp, advantages, cfg.eps_low, cfg.eps_high)
    per_token = surrogate
    kl_mean = 0.0
    if cfg.beta > 0:
        if ref_logp is None:
            raise ValueError("ref_logp is needed when beta > 0")
        kl = k3_kl(logp, ref_logp)
        per_token = surrogate - cfg.beta * kl
        kl_mean = float((kl.detach() * weights).sum() / tokens)
    loss = -(per_token * weights).sum() / tokens
    ratio = (logp - old_logp).exp().detach()
    low = ((ratio < 1 - cfg.eps_low) & (weights > 0)).sum()
    high = ((ratio > 1 + cfg.eps_high) & (weights > 0)).sum()
    return DapoLoss(
        loss=loss,
        surrogate=float((surrogate.detach() * weights).sum() / tokens),
        kl=kl_mean,
        clip_low_fraction=float(low / tokens),
        clip_high_fraction=float(high / tokens),
        tokens=int(weights.sum()),
    )


@dataclass
class FilledBatch(Generic[T]):
    """Groups kept by dynamic sampling, and how many were drawn and dropped."""

    groups: list[T]
    drawn: int
    dropped: int


def fill_batch(
    draw_group: Callable[[], T],
    keep: Callable[[T], bool],
    n_groups: int,
    max_draws: int,
) -> FilledBatch[T]:
    """Dynamic sampling: draw groups until ``n_groups`` kept ones fill the batch.

    ``keep`` is the filter (:func:`group_has_mixed_outcomes` of the group's correctness
    by default in training, or :func:`group_is_informative` of its rewards). Drawing
    stops after ``max_draws`` groups even if the batch is not full (a policy that always
    succeeds or always fails would otherwise loop forever); the caller sees how many
    groups it got.
    """
    if n_groups < 1 or max_draws < n_groups:
        raise ConfigError("need n_groups >= 1 and max_draws >= n_groups")
    kept: list[T] = []
    drawn = 0
    while len(kept) < n_groups and drawn < max_draws:
        group = draw_group()
        drawn += 1
        if keep(group):
            kept.append(group)
    return FilledBatch(kept, drawn, drawn - len(kept))
