"""A DAPO run's resumable state: what ``train rl --resume`` needs beyond the weights.

Each time :func:`~policies.training.rl.train_rl` saves the policy (every ``save_every``
steps and at the end, a spent time budget included) it writes ``trainer_state.pt`` beside
it: the steps done, the optimiser's state, the question order (its random generator and
the questions still queued), torch's random state (the rollouts' sampling), the seconds
spent and the base checkpoint (the KL reference). A resumed run restores all of them, so
its remaining steps are the steps the uninterrupted run would have taken.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from video_env._optional import require
from video_env.errors import ConfigError

__all__ = ["STATE_FILE", "RunState", "latest_state", "same_checkpoint", "save_state"]

#: The state's file name, in the run's folder and in each ``checkpoint-N`` folder.
STATE_FILE = "trainer_state.pt"

_PURPOSE = "resuming a DAPO run"


@dataclass(frozen=True)
class RunState:
    """A saved point of a DAPO run.

    Attributes:
        folder: The folder holding the policy's weights at that point.
        step: Optimiser steps done.
        optimizer: The optimiser's ``state_dict``.
        order: The question order's ``random.Random`` state.
        queue: Ids of the questions still queued, in order.
        torch_rng: torch's CPU random state.
        seconds: Wall-clock seconds the run had spent.
        base: The checkpoint the run started from (its KL reference).
    """

    folder: Path
    step: int
    optimizer: dict[str, Any]
    order: Any
    queue: list[str]
    torch_rng: Any
    seconds: float
    base: str

    def restore_order(self) -> random.Random:
        """The question order's generator, where it was."""
        order = random.Random()
        order.setstate(self.order)
        return order


def save_state(
    folder: Path,
    *,
    step: int,
    optimizer: Any,
    order: random.Random,
    queue: list[str],
    seconds: float,
    base: str,
) -> None:
    """Write ``trainer_state.pt`` into ``folder`` (beside the weights saved there)."""
    torch = require("torch", "models", _PURPOSE)
    state = {
        "step": step,
        "optimizer": optimizer.state_dict(),
        "order": order.getstate(),
        "queue": list(queue),
        "torch_rng": torch.get_rng_state(),
        "seconds": seconds,
        "base": base,
    }
    torch.save(state, folder / STATE_FILE)


def latest_state(run: Path) -> RunState:
    """The run's latest saved state: its own folder's or its newest ``checkpoint-N``'s.

    Raises:
        ConfigError: If the run has no saved state (not a DAPO run, or one made before
            states were kept).
    """
    torch = require("torch", "models", _PURPOSE)
    candidates = [run / STATE_FILE, *run.glob(f"checkpoint-*/{STATE_FILE}")]
    found = []
    for path in candidates:
        if path.is_file():
            saved = torch.load(path, map_location="cpu", weights_only=True)
            found.append(RunState(folder=path.parent, **saved))
    if not found:
        raise ConfigError(f"{run}: no {STATE_FILE} to resume from (start it without --resume)")
    return max(found, key=lambda s: s.step)


def same_checkpoint(a: str, b: str) -> bool:
    """Whether two checkpoint names are the same (local folders compared resolved)."""
    return a == b or (Path(a).exists() and Path(a).resolve() == Path(b).resolve())
