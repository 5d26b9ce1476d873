"""What a training experiment may add to an SFT run of Think-Act turns.

``video-env train sft`` is the paper's recipe: the teacher's turns, the loss on the replies.
An experiment that trains on more (other orders of an MCQ's options, repeated turns, turns
after a failed reply, auxiliary loss targets) passes an :class:`SFTExtension` to
:func:`~policies.training.sft.train_sft` instead of growing the library's settings; the
laboratory's VideoScout-pixel recipe (``experiments/videoscout_pixel``) is one.
"""

from __future__ import annotations

from typing import Any, Protocol

from policies.training.sft_settings import SFTSettings

__all__ = ["SFTExtension"]


class SFTExtension(Protocol):
    """Rows, batch inputs, a trainer and a record an experiment adds to an SFT run."""

    def settings(self) -> dict[str, Any]:
        """The extension's settings, kept under ``"extension"`` in the run's ``sft.json``."""
        ...

    def augment(self, rows: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
        """The rows to train on, from the ``turns.jsonl`` rows (``seed``: the run's)."""
        ...

    def check(self, model_path: str, settings: SFTSettings, rows: list[dict[str, Any]]) -> None:
        """Refuse a run the extension cannot take.

        Raises:
            ConfigError: If the model, the settings or the rows do not suit it.
        """
        ...

    def batch_extras(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """Inputs added to a collated batch of ``rows`` (its trainer takes them out)."""
        ...

    def trainer_class(self, base: type) -> type:
        """The trainer to run, given TRL's ``SFTTrainer`` (``base`` itself if unchanged)."""
        ...

    def record(
        self, log_history: list[dict[str, Any]], rows: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """Keys the run adds to ``sft.json``, from the trainer's log and the rows trained on."""
        ...
