"""A DAPO run's resumable state: what ``train rl --resume`` needs beyond the weights.

Each time :func:`~policies.training.rl.train_rl` saves the policy (every ``save_every``
steps and at the end, a spent time budget included) it writes ``trainer_state.pt`` beside
it: the steps done, the optimizer's state, the question order (its random generator and
the questions still queued), torch's random states (the rollouts' sampling), the seconds
spent, the base checkpoint (the KL reference), the run's settings and the commands that
ran it. A resumed run restores them, so on the CPU its remaining steps are the steps the
uninterrupted run would have taken (GPU kernels are not bitwise deterministic).
"""

from __future__ import annotations

import json
import os
import pickle
import random
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from video_env._optional import require
from video_env.errors import ConfigError

__all__ = [
    "RECORD_FILE",
    "STATE_FILE",
    "RunState",
    "cut_log_to",
    "forget_state",
    "latest_state",
    "recorded_commands",
    "run_record",
    "same_checkpoint",
    "save_state",
]

#: The state's file name, in the run's folder and in each ``checkpoint-N`` folder.
STATE_FILE = "trainer_state.pt"
#: A finished call's record in the run's folder: its settings, command, seed, wall time.
RECORD_FILE = "rl.json"

_PURPOSE = "resuming a DAPO run"


@dataclass(frozen=True)
class RunState:
    """A saved point of a DAPO run.

    Attributes:
        folder: The folder holding the policy's weights at that point.
        step: Optimizer steps done.
        optimizer: The optimizer's ``state_dict``.
        order: The question order's ``random.Random`` state.
        queue: Ids of the questions still queued, in order.
        torch_rng: torch's CPU random state.
        seconds: Wall-clock seconds the run had spent.
        base: The checkpoint the run started from (its KL reference).
        cuda_rng: torch's CUDA random states (empty when saved without a GPU).
        settings: The run's settings that a resumed call must repeat.
        commands: The command lines of the calls so far.
    """

    folder: Path
    step: int
    optimizer: dict[str, Any]
    order: tuple[Any, ...]
    queue: list[str]
    torch_rng: Any
    seconds: float
    base: str
    cuda_rng: list[Any] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)

    def restore_order(self) -> random.Random:
        """The question order's generator, where it was."""
        order = random.Random()
        order.setstate(self.order)
        return order

    def refuse_other_run(self, folder: Path, base: str, settings: dict[str, Any]) -> None:
        """Refuse to resume this state from another base, with other settings or questions.

        Args:
            folder: The run's folder (for the message).
            base: The checkpoint given as the run's start.
            settings: The resumed call's settings (``settings["questions"]``: their ids).

        Raises:
            ConfigError: Naming what differs.
        """
        if not same_checkpoint(self.base, base):
            raise ConfigError(f"{folder} started from {self.base}, not {base}: give its base")
        if not self.settings:  # a state saved before settings were kept: its queue at least
            given = set(settings.get("questions", ()))
            if missing := [i for i in self.queue if i not in given]:
                raise ConfigError(f"resuming {folder}: queued questions {missing[:3]} not given")
            return
        changed = sorted(k for k in settings.keys() | self.settings.keys()
                         if settings.get(k) != self.settings.get(k))  # fmt: skip
        if changed:
            raise ConfigError(f"resuming {folder} with other settings than its run's: {changed}")

    def restore_rng(self) -> None:
        """Put torch's random states (CPU, and CUDA where saved and present) back."""
        torch = require("torch", "models", _PURPOSE)
        torch.set_rng_state(self.torch_rng)
        if self.cuda_rng and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(self.cuda_rng)


def save_state(folder: Path, **state: Any) -> None:
    """Write ``trainer_state.pt`` into ``folder``, atomically, with torch's random states.

    Args:
        folder: Where the policy's weights were just saved.
        **state: The :class:`RunState` fields but ``folder``, ``torch_rng`` and
            ``cuda_rng`` (taken here); ``optimizer`` is the optimizer itself.
    """
    torch = require("torch", "models", _PURPOSE)
    state["optimizer"] = state["optimizer"].state_dict()
    state["torch_rng"] = torch.get_rng_state()
    state["cuda_rng"] = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []
    partial = folder / f"{STATE_FILE}.partial"
    torch.save(state, partial)
    os.replace(partial, folder / STATE_FILE)


def forget_state(folder: Path) -> None:
    """Remove ``folder``'s state before its weights are overwritten (a kill then leaves none)."""
    (folder / STATE_FILE).unlink(missing_ok=True)


def latest_state(run: Path) -> RunState:
    """The run's latest readable state: its own folder's or its newest ``checkpoint-N``'s.

    A state file that cannot be read (cut short by a kill) is passed over. A state saved
    before states kept their commands takes them from the run's ``rl.json``.

    Raises:
        ConfigError: If the run has no readable state (not a DAPO run, or one made before
            states were kept).
    """
    torch = require("torch", "models", _PURPOSE)
    best: tuple[int, Path] | None = None
    for path in [run / STATE_FILE, *run.glob(f"checkpoint-*/{STATE_FILE}")]:
        try:  # memory-mapped: only the step is read here
            step = int(torch.load(path, map_location="cpu", weights_only=True, mmap=True)["step"])
        except (OSError, RuntimeError, EOFError, KeyError, pickle.UnpicklingError,
                zipfile.BadZipFile):  # fmt: skip
            continue
        if best is None or step > best[0]:
            best = (step, path)
    if best is None:
        raise ConfigError(f"{run}: no {STATE_FILE} to resume from (start it without --resume)")
    saved = torch.load(best[1], map_location="cpu", weights_only=True)
    known = RunState.__dataclass_fields__.keys() - {"folder"}
    state = RunState(folder=best[1].parent, **{k: v for k, v in saved.items() if k in known})
    if not state.commands:  # a first-format state: the run's record names its commands
        state = replace(state, commands=recorded_commands(run))
    return state


def recorded_commands(run: Path) -> list[str]:
    """The command lines a run's ``rl.json`` records, earliest first.

    ``rl.json`` is written when a call ends, so a call killed before its end (whose
    state sits in a ``checkpoint-N``) is not among them.

    Args:
        run: The run's folder.

    Returns:
        Its ``earlier_commands`` and its ``command``; empty without a readable record.
    """
    record = run_record(run)
    if not isinstance(record.get("command"), str):
        return []
    earlier = record.get("earlier_commands")
    earlier = earlier if isinstance(earlier, list) else []
    return [*(c for c in earlier if isinstance(c, str)), record["command"]]


def run_record(run: Path) -> dict[str, Any]:
    """A run's ``rl.json``: its last finished call's settings; empty if missing or unreadable.

    Args:
        run: The run's folder.
    """
    try:
        record = json.loads((run / RECORD_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def same_checkpoint(a: str, b: str) -> bool:
    """Whether two checkpoint names are the same (local folders compared resolved)."""
    return a == b or (Path(a).exists() and Path(a).resolve() == Path(b).resolve())


def cut_log_to(path: Path, step: int) -> None:
    """Drop the lines of a run's ``log.jsonl`` after ``step`` (it stopped past its last save).

    A line cut short by a kill is dropped too.
    """
    if not path.is_file():
        return
    kept = []
    for line in path.read_text("utf-8").splitlines():
        try:
            if json.loads(line)["step"] <= step:
                kept.append(line)
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    path.write_text("".join(f"{line}\n" for line in kept), "utf-8")
