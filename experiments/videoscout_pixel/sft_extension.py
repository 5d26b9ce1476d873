"""The VideoScout-pixel recipe's additions to the library's SFT, as one extension.

Option orders, open-answer repeats, recovery turns and binding targets are this
laboratory's experiments on the pixel VLM; :class:`PixelTurnExtension` hands them to
:func:`policies.training.sft.train_sft` through
:class:`~policies.training.sft_extension.SFTExtension`.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from dataclasses import dataclass
from typing import Any

from experiments.videoscout_pixel.answer_binding import AnswerEvidence, binding_trainer
from experiments.videoscout_pixel.open_answer_repeats import with_open_answer_repeats
from experiments.videoscout_pixel.option_orders import with_option_orders
from experiments.videoscout_pixel.recovery_turns import (
    FAILURES,
    check_failures,
    with_recovery_turns,
)
from policies.training.sft import SFTSettings
from video_env.errors import ConfigError
from video_env.pixel import is_pixel_vlm

__all__ = ["PixelTurnExtension"]


@dataclass(frozen=True)
class PixelTurnExtension:
    """The recipe's SFT additions (defaults: none of them, the paper's SFT).

    Attributes:
        option_orders: Train on each MCQ answer turn in this many orders of its options
            (:mod:`~experiments.videoscout_pixel.option_orders`; 1: the turns as distilled).
        open_answer_repeats: Train on each open answer turn this many times (1: once), to
            weigh the open answers against the MCQ answers shown in several orders.
        recovery_turns: The share of turns also shown as after a failed reply, with the
            same reply (:mod:`~experiments.videoscout_pixel.recovery_turns`; 0: none).
        recovery_failures: The failures those turns follow (a subset of ``FAILURES``).
        binding: Weight of the binding targets on the pixel world's sighted MCQ answer
            turns (:mod:`~experiments.videoscout_pixel.answer_binding`; 0: none).
        binding_open: Whether sighted open answer turns get binding targets too.
        binding_letters: Whether the binding targets include the letters read at the hops
            through the model's output layer (False: their attention targets alone).
    """

    option_orders: int = 1
    open_answer_repeats: int = 1
    recovery_turns: float = 0.0
    recovery_failures: tuple[str, ...] = FAILURES
    binding: float = 0.0
    binding_open: bool = False
    binding_letters: bool = True

    def __post_init__(self) -> None:
        check_failures(self.recovery_failures)
        if not 0.0 <= self.recovery_turns <= 1.0:
            raise ConfigError(f"recovery_turns must be in [0, 1], got {self.recovery_turns}")
        if self.option_orders < 1:
            raise ConfigError(f"option_orders must be at least 1, got {self.option_orders}")
        if self.open_answer_repeats < 1:
            raise ConfigError(
                f"open_answer_repeats must be at least 1, got {self.open_answer_repeats}"
            )
        if self.binding < 0:
            raise ConfigError(f"binding must be at least 0, got {self.binding}")
        if not self.binding_letters and not self.binding:
            raise ConfigError("binding_letters=False (attention-only targets) needs binding > 0")
        if self.binding_open and not self.binding:
            raise ConfigError("binding_open=True (open answers bound too) needs binding > 0")

    @functools.cached_property
    def evidence(self) -> AnswerEvidence | None:
        """What finds the binding targets' evidence (``None`` without binding).

        One for the run, so its cache of videos and found rows serves every batch.
        """
        return AnswerEvidence(open_answers=self.binding_open) if self.binding else None

    def settings(self) -> dict[str, Any]:
        """The extension's settings, for ``sft.json``."""
        return dataclasses.asdict(self)

    def augment(self, rows: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
        """Rows in option orders, open answers repeated, then recovery turns."""
        rows = with_option_orders(rows, self.option_orders)
        rows = with_open_answer_repeats(rows, self.open_answer_repeats)
        return with_recovery_turns(rows, self.recovery_turns, seed, self.recovery_failures)

    def check(self, model_path: str, settings: SFTSettings, rows: list[dict[str, Any]]) -> None:
        """Binding needs the pixel VLM, full fine-tuning, no checkpointing and sighted turns.

        Raises:
            ConfigError: If the run cannot take the binding targets.
        """
        evidence = self.evidence
        if evidence is None:
            return
        if settings.lora_rank:
            raise ConfigError("binding trains the full model: no LoRA with it")
        if settings.gradient_checkpointing:
            raise ConfigError(
                "binding runs its batches with the eager kernel, which a checkpointed "
                "backward would recompute with another: no gradient checkpointing with it"
            )
        bound = len(evidence.rows(rows))
        if not (bound and is_pixel_vlm(model_path)):
            raise ConfigError(
                "binding needs the pixel VLM (its circuit) and sighted MCQ (with binding_open, "
                "or open) answer turns of the pixel world's lead teacher, the question first "
                "(python -m experiments.videoscout_pixel distill --teacher scripted-frames:lead "
                f"--question-first --split ...): {model_path} ({bound} such turns)"
            )

    def batch_extras(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """The sighted answers' evidence rows under ``"evidence"``, where a batch has any."""
        evidence = self.evidence
        found = evidence.rows(rows) if evidence is not None else []
        return {"evidence": found} if found else {}

    def trainer_class(self, base: type) -> type:
        """``base`` with the binding loss added, where binding is on."""
        if not self.binding:
            return base
        return binding_trainer(base, self.binding, letters=self.binding_letters)

    def record(
        self, log_history: list[dict[str, Any]], rows: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The bound rows and the binding loss of every logged step, where binding is on."""
        evidence = self.evidence
        if evidence is None:
            return {}
        binding = [float(e["binding"]) for e in log_history if "binding" in e]
        if not binding:  # rows found, but no target located in their tokens
            warnings.warn("binding: no batch had a target (see sft.json)", stacklevel=2)
        return {"binding_rows": len(evidence.rows(rows)), "binding": binding}
