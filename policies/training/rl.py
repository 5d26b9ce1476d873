"""DAPO for the VideoScout policy: rollouts in the Pacing env, the loss of :mod:`.dapo`.

One optimisation step: draw groups (G trajectories of one question each) until
``groups_per_step`` kept ones fill the batch (dynamic sampling: by default a group that is
all correct or all wrong is dropped, as VideoScout; ``dynamic_filter="equal-reward"`` is
DAPO's rule), shape each trajectory's reward with DAPO's soft overlong punishment of its
longest reply (``overlong="soft"``; ``"filter"`` masks a truncated trajectory's loss
instead, ``"none"`` neither), then take the step (:func:`~.dapo_step.dapo_step`).

This is a single-process trainer for small models and for checking the recipe; multi-GPU
scale is a distributed engine's job (see ``docs/training.md``).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from policies.episode_settings import EpisodeSettings
from policies.training.dapo import (
    DAPOSettings,
    fill_batch,
    group_has_mixed_outcomes,
    group_is_informative,
    overlong_penalty,
)
from policies.training.dapo_step import (
    StepStats,
    dapo_step,
    reply_logprobs,
    reply_tokens,
    rollout_metrics,
)
from policies.training.provenance import freeze_vision_blocks, keep_pixel_vlm_marker
from policies.training.rl_log import describe_step, tensorboard_writer
from policies.training.rl_speed import speed_up
from policies.training.rl_state import (
    RECORD_FILE,
    cut_log_to,
    forget_state,
    latest_state,
    save_state,
)
from policies.training.rollout import PolicyChat, Trajectory, rollout_group
from policies.videoscout.record import save_trained_rules
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
    """A DAPO run's settings (defaults: the VideoScout paper's, where it gives one).

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
        vision_cache_mb: Megabytes of vision features kept for the policy and its
            reference together (:mod:`~policies.training.rl_speed`; 0: none). Torch's
            threads follow the free cores (``VIDEO_ENV_TORCH_THREADS`` overrides).
        share_first_turn: A group's identical first turns as one call of G rows
            (:class:`~policies.training.group_chat.SharedTurnChat`).
        explore_pace: Share of rollout turns decoded with the answers masked out where
            another action is legal, and scored under the turn's full guide: the pace a
            policy that always answers at once never samples (reading on) is tried, and
            rewarded at the decision where it paid. A biased, off-policy update (the
            sampler is not the policy); 0, the default, is DAPO's own. Needs ``guided``
            or ``format_guided``.
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
    vision_cache_mb: int = 512
    share_first_turn: bool = True
    explore_pace: float = 0.0
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
        if self.overlong_buffer < 1 or self.vision_cache_mb < 0:
            raise ConfigError("overlong_buffer must be >= 1 and vision_cache_mb >= 0")
        if self.score_guided and not self.episode.format_guided:
            raise ConfigError("score_guided scores format-guided rollouts: set format_guided")
        if not 0.0 <= self.explore_pace <= 1.0:
            raise ConfigError(f"explore_pace must be in [0, 1], got {self.explore_pace}")
        if self.explore_pace and not (self.episode.guided or self.episode.format_guided):
            raise ConfigError("explore_pace masks a guide's answers: set guided or format_guided")


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
    speed_up(torch, model, reference, cfg.vision_cache_mb)
    chat = PolicyChat(model, processor, device, share_first_turn=cfg.share_first_turn)
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
        group = rollout_group(chat, sample, cfg.episode, group_size=cfg.group_size, seed=seed,
                              explore_pace=cfg.explore_pace)  # fmt: skip
        drawn.extend(group)
        return [shaped(t, cfg) for t in group]

    folder.mkdir(parents=True, exist_ok=True)
    # first: its checkpoint-N folders, and a run that is stopped, bench under these rules
    layout = cfg.episode.layout
    save_trained_rules(
        folder, cfg.episode.rules, end_note=layout.end_note, question_first=layout.question_first
    )
    history: list[StepStats] = []
    board = tensorboard_writer(folder / "tensorboard", purge_step=done + 1 if done else None)

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
        rollout_s = time.perf_counter() - started
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
            rollout_s=rollout_s,
            **{k: totals.get(k, 0.0) for k in ("reference_s", "forward_s", "backward_s")},
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
            log(describe_step(stats))
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
        "machine": machine(),  # its torch_threads: those speed_up chose
        "command": commands[-1],
    }
    if resumed is not None:
        settings.update(resumed_after_step=done, earlier_commands=commands[:-1])
    (folder / RECORD_FILE).write_text(json.dumps(settings, indent=2, default=str), "utf-8")
    keep_pixel_vlm_marker(model_path, folder, "rl", json.loads(json.dumps(settings, default=str)))
    return history


#: Settings a resumed call may change: how long the run goes on, when it saves, its speed.
_NOT_RESUMED = frozenset(
    {"steps", "max_seconds", "resume", "save_every", "vision_cache_mb", "share_first_turn"}
)


def _resumable_settings(cfg: DAPOConfig, samples: Sequence[VideoQA]) -> dict[str, Any]:
    """What a resumed call must repeat: the settings but its length, and the questions."""
    settings = {k: v for k, v in _settings(cfg).items() if k not in _NOT_RESUMED}
    settings.update(questions=[s.id for s in samples])
    normalised: dict[str, Any] = json.loads(json.dumps(settings, default=str))
    return normalised


def _settings(cfg: DAPOConfig) -> dict[str, Any]:
    """The run's settings, JSON-ready (the episode's as :meth:`EpisodeSettings.to_dict`).

    Not ``asdict(cfg)`` whole: it would deep-copy the episode's env arguments, which may
    hold backends (a lock, a model).
    """
    plain = {f.name: getattr(cfg, f.name) for f in fields(cfg) if f.name not in ("loss", "episode")}
    return {**plain, "loss": asdict(cfg.loss), "episode": cfg.episode.to_dict()}


def _save(model: Any, processor: Any, folder: Path) -> None:
    model.save_pretrained(str(folder))
    processor.save_pretrained(str(folder))
