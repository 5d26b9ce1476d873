"""What ``train trl --resume`` needs beyond TRL's own checkpoint.

TRL's trainer saves, in every ``checkpoint-N``, the policy, optimizer, scheduler, random
states and step (``trainer_state.json``); ``trainer.train(resume_from_checkpoint=...)``
continues from them. What it does not keep is the run itself: which base the KL term
holds the policy to, the settings and questions a continuation must repeat, the commands
that ran it and the wall-clock seconds spent, which ``--max-seconds`` counts over the
whole run as ``train rl --resume`` does. :func:`progress_callback` writes those into each
checkpoint (:data:`PROGRESS_FILE`); :func:`resume_point` reads the latest one back and
refuses a continuation from another base, with other settings or on other questions.

One more thing TRL's resume gets wrong for Qwen2.5-VL under transformers 5: the trainer
reloads a checkpoint's weights by their saved names, which ``save_pretrained`` writes in
the model's legacy layout (``visual.*``, ``model.layers.*``), not the loaded model's
(``model.visual.*``, ``model.language_model.*``); no name matches, so the policy would
silently restart from its base while the optimizer continues.
:func:`load_policy_weights` loads them through ``from_pretrained``, which maps the names,
before the trainer is built.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policies.training.rl_state import same_checkpoint
from video_env._optional import require
from video_env.errors import ConfigError

__all__ = [
    "FREE_SETTINGS",
    "PROGRESS_FILE",
    "ResumePoint",
    "load_policy_weights",
    "progress_callback",
    "resume_point",
]

_PURPOSE = "TRL's GRPO trainer with the Pacing env"

#: The run's progress in each ``checkpoint-N`` of a ``train trl`` run.
PROGRESS_FILE = "trl_progress.json"

#: Settings a continuation may change: the run's length (``--steps``). Not the save
#: interval: TRL's resume keeps the checkpoint's.
FREE_SETTINGS = frozenset({"max_steps"})

#: Settings the progress record gained after runs had been saved without them, with the
#: value those runs had (a run from before ``world_size`` was kept ran on one process);
#: settings given without them mean the same.
_RECORDED_LATER: dict[str, Any] = {"world_size": 1}


@dataclass(frozen=True)
class ResumePoint:
    """The latest saved point of a ``train trl`` run.

    Attributes:
        checkpoint: Its ``checkpoint-N`` folder (TRL's ``resume_from_checkpoint``).
        step: The optimiser steps it had taken.
        seconds: Wall-clock seconds the run had spent up to it.
        commands: The commands that ran it, first to last.
    """

    checkpoint: Path
    step: int
    seconds: float
    commands: tuple[str, ...]


def _plain(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` as JSON gives them back, without :data:`FREE_SETTINGS`."""
    return {
        key: value
        for key, value in json.loads(json.dumps(dict(settings), default=str)).items()
        if key not in FREE_SETTINGS
    }


def progress_callback(
    base: str,
    settings: Mapping[str, Any],
    questions: Sequence[str],
    commands: Sequence[str],
    *,
    spent: float = 0.0,
    clock: Callable[[], float] = time.monotonic,
) -> Any:
    """A trainer callback that writes the run's progress into each checkpoint it saves.

    Args:
        base: The starting checkpoint (the KL term's reference).
        settings: The ``GRPOConfig`` settings the command gave.
        questions: The ids of the questions trained on.
        commands: The commands that ran the run so far, this one last.
        spent: Seconds earlier calls of the run spent.
        clock: Seconds now (a test's clock).

    Returns:
        A ``transformers.TrainerCallback``.
    """
    transformers = require("transformers", "train", _PURPOSE)
    record = {
        "base": str(base),
        "settings": _plain(settings),
        "questions": list(questions),
        "commands": list(commands),
    }

    class RunProgress(transformers.TrainerCallback):  # type: ignore[misc,name-defined]
        """Writes :data:`PROGRESS_FILE` beside TRL's state in each checkpoint."""

        def __init__(self) -> None:
            self.start: float | None = None

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.start = clock()

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if not state.is_world_process_zero:
                return
            step = int(state.global_step)
            folder = Path(args.output_dir) / f"checkpoint-{step}"
            seconds = spent + (clock() - self.start if self.start is not None else 0.0)
            progress = {**record, "step": step, "seconds": round(seconds, 1)}
            (folder / PROGRESS_FILE).write_text(json.dumps(progress, indent=2), "utf-8")

    return RunProgress()


def resume_point(
    out: str | Path, base: str, settings: Mapping[str, Any], questions: Sequence[str]
) -> ResumePoint:
    """The latest checkpoint of the ``train trl`` run in ``out``, checked against this call.

    Args:
        out: The run's folder.
        base: The starting checkpoint this call gives.
        settings: The ``GRPOConfig`` settings this call gives.
        questions: The ids of the questions this call trains on.

    Returns:
        Where the run goes on from.

    Raises:
        ConfigError: Without a checkpoint with its progress in ``out``, or when the run
            started from another base, or with other settings or questions than these.
    """
    folder = Path(out)
    saved = [
        (int(path.parent.name.removeprefix("checkpoint-")), path)
        for path in folder.glob(f"checkpoint-*/{PROGRESS_FILE}")
        if path.parent.name.removeprefix("checkpoint-").isdigit()
    ]
    if not saved:
        raise ConfigError(
            f"{folder}: no checkpoint-N with {PROGRESS_FILE} to resume from (start it "
            "without --resume; --save-steps sets how often a run saves one)"
        )
    step, path = max(saved)
    try:
        progress = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: unreadable ({exc})") from exc
    if not same_checkpoint(str(progress.get("base")), str(base)):  # train rl's rule
        raise ConfigError(f"{folder} started from {progress.get('base')!r}, not {str(base)!r}")
    given = {**_RECORDED_LATER, **_plain(settings)}
    kept = {**_RECORDED_LATER, **progress.get("settings", {})}
    differ = sorted(key for key in given.keys() | kept.keys() if given.get(key) != kept.get(key))
    if differ:
        changes = ", ".join(f"{key} {kept.get(key)!r} -> {given.get(key)!r}" for key in differ)
        raise ConfigError(f"{folder} ran with other settings: {changes}")
    if progress.get("questions") != list(questions):
        raise ConfigError(f"{folder} trained on other questions than these")
    return ResumePoint(
        checkpoint=path.parent,
        step=step,
        seconds=float(progress.get("seconds", 0.0)),
        commands=tuple(progress.get("commands", ())),
    )


def load_policy_weights(model: Any, checkpoint: str | Path) -> None:
    """Copy the weights saved in ``checkpoint`` into ``model``, every one of them.

    ``model`` keeps its config, so its name (TRL's reference model for the KL term) stays
    the run's base. The checkpoint is read in ``model``'s dtype (a second copy of the
    model while it is copied over).

    Args:
        model: The policy, loaded from the run's base.
        checkpoint: A ``checkpoint-N`` folder of the run.

    Raises:
        ConfigError: ``checkpoint`` holds weights of another architecture or shape.
    """
    transformers = require("transformers", "train", _PURPOSE)
    saved = transformers.AutoModelForImageTextToText.from_pretrained(
        str(checkpoint), local_files_only=True, dtype=model.dtype
    )
    try:
        model.load_state_dict(saved.state_dict(), strict=True)
    except RuntimeError as exc:
        raise ConfigError(f"{checkpoint}: not the weights of this model ({exc})") from exc
