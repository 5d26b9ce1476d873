"""DAPO for the VideoScout policy: rollouts in the Pacing env, the loss of :mod:`.dapo`.

One optimisation step: draw groups (G trajectories of one question each) until
``groups_per_step`` kept ones fill the batch (dynamic sampling: by default a group that is
all correct or all wrong is dropped, as VideoScout; ``dynamic_filter="equal-reward"`` is
DAPO's rule), shape each trajectory's reward with DAPO's soft overlong punishment of its
longest reply (``overlong="soft"``; ``"filter"`` masks a truncated trajectory's loss
instead, ``"none"`` neither), score every reply token
under the sampling policy (``old``) and the frozen reference, then for ``ppo_epochs``
passes accumulate the gradient of each group's token-normalised loss (Eqs. (4)–(6)),
averaged over the groups, and take one optimiser step. Turns are encoded one at a time
(:func:`reply_logprobs`), so memory holds one turn's activations, whatever the trajectory
length. A turn's reply is scored as the token ids the rollout sampled
(:attr:`~policies.training.turn_inputs.TurnExample.reply_ids`), not its text re-tokenised.

This is a single-process trainer for small models and for checking the recipe; multi-GPU
scale is a distributed engine's job (see ``docs/training.md``).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from policies.episode_settings import EpisodeSettings
from policies.training.dapo import (
    DAPOSettings,
    dapo_loss,
    fill_batch,
    group_advantages,
    group_has_mixed_outcomes,
    group_is_informative,
    overlong_penalty,
)
from policies.training.episodes import format_valid, rewatch_rate
from policies.training.provenance import freeze_vision_blocks, keep_pixel_vlm_marker
from policies.training.rl_state import (
    RECORD_FILE,
    cut_log_to,
    forget_state,
    latest_state,
    save_state,
)
from policies.training.rollout import PolicyChat, Trajectory, rollout_group
from policies.training.turn_inputs import TurnExample, collate_turns
from policies.videoscout_record import save_trained_rules
from video_env._optional import require
from video_env.errors import ConfigError
from video_env.run_record import command_line, machine
from video_env.types import VideoQA

__all__ = [
    "DYNAMIC_FILTERS",
    "OVERLONG",
    "DAPOConfig",
    "StepStats",
    "dapo_step",
    "group_filter",
    "reply_logprobs",
    "reply_tokens",
    "rollout_metrics",
    "shaped",
    "train_rl",
]

#: Dynamic sampling's filters: VideoScout's (correctness) and DAPO's (equal rewards).
DYNAMIC_FILTERS = ("correctness", "equal-reward")
#: Overlong handling: DAPO's soft punishment, overlong filtering, or none.
OVERLONG = ("soft", "filter", "none")

_PURPOSE = "DAPO training of the VideoScout policy"


@dataclass(frozen=True)
class DAPOConfig:
    """A DAPO run's settings (defaults: VideoScout's, DESIGN §4, where it gives one).

    Attributes:
        loss: Clip range, KL weight (Eqs. (5)–(6)).
        group_size: Trajectories per question (G = 8).
        learning_rate: AdamW learning rate (5e-6).
        groups_per_step: Informative groups per optimiser step (gradients accumulated).
        max_draws_per_step: Groups drawn at most per step (dynamic sampling's bound).
        ppo_epochs: Passes over a batch (1: on-policy, the ratio is 1 at the first pass).
        steps: Optimiser steps.
        dynamic_filter: ``"correctness"`` (drop groups all correct or all wrong, the
            paper's) or ``"equal-reward"`` (drop groups whose rewards are all equal, DAPO's).
        overlong: ``"soft"`` (DAPO's soft overlong punishment of the longest reply added
            to the reward), ``"filter"`` (a trajectory with a truncated reply gets no
            loss), or ``"none"``.
        overlong_buffer: The punishment's ramp, in tokens before ``max_new_tokens`` (at
            most ``max_new_tokens``).
        overlong_factor: The punishment at the cap (DAPO's 1.0).
        max_grad_norm: Gradient clipping.
        save_every: Checkpoint every N steps (0: only at the end).
        max_seconds: A wall-clock budget: no step starts once it is spent (the run then
            ends as after its last step, saved and recorded; ``None``: no budget).
        seed: Seed of the question order and of the env resets.
        episode: How rollouts are played: the rules and prompt layout (the SFT start's, to
            match), the turn cap, the reply budget (4,096 tokens, the paper's), the
            sampling temperature (log-probs use the same) and the decoding guides. With
            ``guided`` or ``format_guided`` the loss still scores the free model's
            log-probabilities of the sampled reply (a biased, off-policy update), so a
            forced legal action with a positive advantage becomes likelier unguided too.
        bf16: Load the policy and the reference in bfloat16 (GPU memory; log-probabilities
            are still taken in float32).
        freeze_vision: Keep the vision tower's blocks as they are (its merger trains).
        score_guided: Score format-guided rollouts under the distribution they were
            sampled from: at each reply position, the tokens the turn's pattern forbade
            are masked before the softmax (for the policy, the old policy and the
            reference), so the update follows the guided sampler and forced tokens carry
            no gradient. Needs ``format_guided``.
        resume: Continue the run in ``out`` from its latest saved state
            (:mod:`~policies.training.rl_state`): the policy, the optimizer, the steps
            done, the question order and the random state. The other settings and the
            questions must be the run's; ``steps`` and ``max_seconds`` count the whole
            run, and the reference stays the base checkpoint.
    """

    loss: DAPOSettings = field(default_factory=DAPOSettings)
    group_size: int = 8
    learning_rate: float = 5e-6
    groups_per_step: int = 4
    max_draws_per_step: int = 16
    ppo_epochs: int = 1
    steps: int = 100
    dynamic_filter: str = "correctness"
    overlong: str = "soft"
    overlong_buffer: int = 1024
    overlong_factor: float = 1.0
    max_grad_norm: float = 1.0
    save_every: int = 0
    max_seconds: float | None = None
    seed: int = 0
    bf16: bool = False
    freeze_vision: bool = False
    score_guided: bool = False
    resume: bool = False
    episode: EpisodeSettings = field(
        default_factory=lambda: EpisodeSettings(max_new_tokens=4096, temperature=1.0)
    )

    def with_episode(self, **changes: Any) -> DAPOConfig:
        """These settings with ``changes`` to the rollouts' (:class:`EpisodeSettings`)."""
        return replace(self, episode=self.episode.replace(**changes))

    def __post_init__(self) -> None:
        if self.group_size < 2:
            raise ConfigError("group_size must be >= 2 (advantages are relative to the group)")
        if self.episode.temperature <= 0:
            raise ConfigError("rollouts must sample: temperature > 0")
        if self.dynamic_filter not in DYNAMIC_FILTERS or self.overlong not in OVERLONG:
            raise ConfigError(
                f"dynamic_filter must be one of {DYNAMIC_FILTERS}, overlong one of {OVERLONG}"
            )
        if self.overlong_buffer < 1:
            raise ConfigError("overlong_buffer must be >= 1")
        if self.score_guided and not self.episode.format_guided:
            raise ConfigError("score_guided scores format-guided rollouts: set format_guided")


def group_filter(cfg: DAPOConfig) -> Callable[[Sequence[Trajectory]], bool]:
    """Dynamic sampling's keep-rule for ``cfg`` (correctness by default)."""
    if cfg.dynamic_filter == "correctness":
        return lambda group: group_has_mixed_outcomes([t.correct for t in group])
    return lambda group: group_is_informative([t.reward for t in group])


def shaped(trajectory: Trajectory, cfg: DAPOConfig) -> Trajectory:
    """The trajectory with the soft overlong punishment of its longest reply in its reward.

    Unchanged unless ``cfg.overlong == "soft"``.
    """
    if cfg.overlong != "soft" or not trajectory.reply_tokens:
        return trajectory
    longest = max(trajectory.reply_tokens)
    if trajectory.truncated:
        longest = max(longest, cfg.episode.max_new_tokens + 1)  # cut by the cap: the full penalty
    budget = cfg.episode.max_new_tokens
    buffer = min(cfg.overlong_buffer, budget)
    penalty = overlong_penalty(longest, budget, buffer, cfg.overlong_factor)
    return replace(trajectory, reward=trajectory.reward + penalty)


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
        The mean loss over groups (of the last pass), KL, clip fractions and token count.
    """
    torch = require("torch", "models", _PURPOSE)
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
    totals: dict[str, float] = {}
    for _ in range(ppo_epochs):
        optimizer.zero_grad()
        totals = {"loss": 0.0, "kl": 0.0, "clip_low": 0.0, "clip_high": 0.0, "tokens": 0.0}
        for advantages, turns, n_group in prepared:
            for turn, i, old, ref, _ in turns:
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
                (out.loss * weight).backward()  # type: ignore[no-untyped-call]
                totals["loss"] += float(out.loss.detach()) * weight
                totals["kl"] += out.kl * weight
                totals["clip_low"] += out.clip_low_fraction * weight
                totals["clip_high"] += out.clip_high_fraction * weight
                totals["tokens"] += out.tokens
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
    return totals


def train_rl(
    model_path: str,
    samples: Sequence[VideoQA],
    out: str | Path,
    config: DAPOConfig | None = None,
    *,
    log: Callable[[str], None] | None = print,
) -> list[StepStats]:
    """DAPO on ``samples`` from the checkpoint ``model_path``; saves to ``out``.

    ``samples`` should carry the teacher's answer chunk in ``meta["reference_chunk"]``
    (:func:`~policies.training.distill.with_reference_chunks`). Writes ``log.jsonl`` (one
    :class:`StepStats` per step), ``checkpoint-N/`` every ``save_every`` steps, and the
    final model + processor + ``rl.json`` in ``out``; each saved model has its run's
    state beside it (:mod:`~policies.training.rl_state`), which ``cfg.resume`` continues.

    Returns:
        The steps this call took.

    Raises:
        ConfigError: Without questions, or when resuming a run whose base, settings or
            questions are not these.
    """
    cfg = config or DAPOConfig()
    if not samples:
        raise ConfigError("no questions to train on")
    torch = require("torch", "models", _PURPOSE)
    transformers = require("transformers", "models", _PURPOSE)
    torch.manual_seed(cfg.seed)
    folder = Path(out)
    fingerprint = _resumable_settings(cfg, samples)
    resumed = latest_state(folder) if cfg.resume else None
    if resumed is not None:
        resumed.refuse_other_run(folder, model_path, fingerprint)
        if resumed.step >= cfg.steps:
            if log is not None:
                log(f"{folder} has done {resumed.step} of {cfg.steps} steps: nothing to resume")
            return []
    commands = [*(resumed.commands if resumed is not None else []), command_line()]
    processor = transformers.AutoProcessor.from_pretrained(model_path, local_files_only=True)
    dtype = torch.bfloat16 if cfg.bf16 else torch.float32
    load = transformers.AutoModelForImageTextToText.from_pretrained
    policy_path = str(resumed.folder) if resumed is not None else model_path
    model = load(policy_path, dtype=dtype, local_files_only=True)  # never a download
    reference = None
    if cfg.loss.beta > 0:
        reference = load(model_path, dtype=dtype, local_files_only=True).eval()
        reference.requires_grad_(False)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(device)
    if reference is not None:
        reference.to(device)
    if cfg.freeze_vision:
        freeze_vision_blocks(model)
    trained = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=cfg.learning_rate)
    chat = PolicyChat(model, processor, device)
    order = random.Random(cfg.seed)
    queue: list[VideoQA] = []
    done, spent = 0, 0.0
    if resumed is not None:
        by_id = {sample.id: sample for sample in samples}
        optimizer.load_state_dict(resumed.optimizer)
        order = resumed.restore_order()
        queue = [by_id[i] for i in resumed.queue]
        resumed.restore_rng()
        done, spent = resumed.step, resumed.seconds
        cut_log_to(folder / "log.jsonl", done)
        if log is not None:
            log(f"resuming {folder} after step {done} (from {resumed.folder})")
    start = time.monotonic() - spent

    drawn: list[Trajectory] = []  # this step's rollouts, every group drawn

    def draw() -> list[Trajectory]:
        if not queue:
            queue.extend(order.sample(list(samples), len(samples)))
        sample = queue.pop()
        seed = order.randrange(2**31)
        group = rollout_group(chat, sample, cfg.episode, group_size=cfg.group_size, seed=seed)
        drawn.extend(group)
        return [shaped(t, cfg) for t in group]

    folder.mkdir(parents=True, exist_ok=True)
    # first: its checkpoint-N folders, and a run that is stopped, bench under these rules
    layout = cfg.episode.layout
    save_trained_rules(
        folder, cfg.episode.rules, end_note=layout.end_note, question_first=layout.question_first
    )
    history: list[StepStats] = []
    board = _tensorboard(folder / "tensorboard", purge_step=done + 1 if done else None)

    def save(where: Path, step: int) -> None:
        forget_state(where)  # weights and state always match: a kill mid-save leaves neither
        _save(model, processor, where)
        save_state(where, step=step, optimizer=optimizer, order=order.getstate(),
                   queue=[q.id for q in queue], seconds=time.monotonic() - start,
                   base=model_path, settings=fingerprint, commands=commands)  # fmt: skip

    for step in range(done + 1, cfg.steps + 1):
        if cfg.max_seconds is not None and time.monotonic() - start >= cfg.max_seconds:
            if log is not None:
                log(f"time budget of {cfg.max_seconds:.0f} s spent: stopping before step {step}")
            break
        started = time.perf_counter()
        drawn.clear()
        batch = fill_batch(draw, group_filter(cfg), cfg.groups_per_step,
                           cfg.max_draws_per_step)  # fmt: skip
        totals = {"loss": 0.0, "kl": 0.0, "clip_low": 0.0, "clip_high": 0.0, "tokens": 0.0}
        if batch.groups:
            model.train()
            totals = dapo_step(model, reference, processor, optimizer, batch.groups, cfg.loss,
                               temperature=cfg.episode.temperature, ppo_epochs=cfg.ppo_epochs,
                               max_grad_norm=cfg.max_grad_norm,
                               mask_truncated=cfg.overlong == "filter",
                               score_guided=cfg.score_guided)  # fmt: skip
        rewards = [t.reward for g in batch.groups for t in g]
        stats = StepStats(
            step=step,
            groups=len(batch.groups),
            drawn=batch.drawn,
            dropped=batch.dropped,
            mean_reward=sum(rewards) / len(rewards) if rewards else 0.0,
            loss=totals["loss"],
            kl=totals["kl"],
            clip_low=totals["clip_low"],
            clip_high=totals["clip_high"],
            tokens=int(totals["tokens"]),
            seconds=time.perf_counter() - started,
            **rollout_metrics(drawn),
        )
        history.append(stats)
        if board is not None:
            for name, value in asdict(stats).items():
                if name != "step":
                    board.add_scalar(f"rl/{name}", value, step)
            board.flush()
        with (folder / "log.jsonl").open("a", encoding="utf-8") as f:
            f.write(json.dumps(asdict(stats)) + "\n")
        if log is not None:
            log(_describe(stats))
        if cfg.save_every and step % cfg.save_every == 0:
            save(folder / f"checkpoint-{step}", step)
    if board is not None:
        board.close()
    steps_done = done + len(history)
    save(folder, steps_done)
    settings = {
        **_settings(cfg),
        "base": model_path,
        "questions": len(samples),
        "steps_done": steps_done,
        "seconds": round(time.monotonic() - start, 1),
        "machine": machine(),
        "command": commands[-1],
    }
    if resumed is not None:
        settings.update(resumed_after_step=done, earlier_commands=commands[:-1])
    (folder / RECORD_FILE).write_text(json.dumps(settings, indent=2, default=str), "utf-8")
    keep_pixel_vlm_marker(model_path, folder, "rl", json.loads(json.dumps(settings, default=str)))
    return history


def _describe(s: StepStats) -> str:
    played = (
        f"rollouts: reward {s.drawn_reward:.3f}, accuracy {s.accuracy:.2f}, format-valid "
        f"{s.format_valid:.2f}, {s.turns:.1f} turns, rewatch {s.rewatch_rate:.2f}"
    )
    if not s.groups:
        return f"step {s.step}: no group kept in {s.drawn} draws (dynamic sampling); {played}"
    return (
        f"step {s.step}: {s.groups} groups ({s.dropped} dropped of {s.drawn}), reward "
        f"{s.mean_reward:.3f}, loss {s.loss:.4f}, kl {s.kl:.4f}, clipped "
        f"{s.clip_low:.2%}/{s.clip_high:.2%}, {s.tokens} tokens, {s.seconds:.1f} s; {played}"
    )


def _tensorboard(folder: Path, purge_step: int | None = None) -> Any:
    """A TensorBoard writer into ``folder``, or ``None`` without the ``tensorboard`` package.

    ``purge_step``: a resumed run's first step; events logged from it on are dropped.
    """
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # the rl extra brings it
        return None
    return SummaryWriter(str(folder), purge_step=purge_step)


#: Settings a resumed call may change: how long the run goes on, and when it saves.
_NOT_RESUMED = frozenset({"steps", "max_seconds", "resume", "save_every"})


def _resumable_settings(cfg: DAPOConfig, samples: Sequence[VideoQA]) -> dict[str, Any]:
    """What a resumed call must repeat: the settings but its length, and the questions."""
    settings = {k: v for k, v in _settings(cfg).items() if k not in _NOT_RESUMED}
    settings.update(questions=[s.id for s in samples])
    normalised: dict[str, Any] = json.loads(json.dumps(settings, default=str))
    return normalised


def _settings(cfg: DAPOConfig) -> dict[str, Any]:
    """The run's settings, JSON-ready (the episode's as :meth:`EpisodeSettings.to_dict`)."""
    return {**asdict(cfg), "episode": cfg.episode.to_dict()}


def _save(model: Any, processor: Any, folder: Path) -> None:
    model.save_pretrained(str(folder))
    processor.save_pretrained(str(folder))
