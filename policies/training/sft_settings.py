"""The SFT run's settings: the VideoScout paper's hyper-parameters, and ours beside them.

Read by :func:`~policies.training.sft.train_sft`, by the ``train sft`` flags, and by an
:class:`~policies.training.sft_extension.SFTExtension` that checks a run it extends.
"""

from __future__ import annotations

from dataclasses import dataclass

from video_env.errors import ConfigError

__all__ = ["SFTSettings"]


@dataclass(frozen=True)
class SFTSettings:
    """SFT hyper-parameters (defaults: the VideoScout paper's).

    Attributes:
        learning_rate: Peak learning rate.
        epochs: Passes over the dataset.
        batch_size: Global batch (per-device batch × accumulation × devices).
        per_device_batch: Turns per forward pass on one device.
        warmup_ratio: Fraction of steps of linear warm-up.
        scheduler: Learning-rate schedule after warm-up.
        max_steps: Stop after this many optimizer steps (-1: the epochs decide).
        lora_rank: LoRA rank (0: full fine-tuning).
        lora_alpha: LoRA scaling.
        bf16: bfloat16 mixed precision (on a GPU; without one, the Trainer's CPU
            autocast, faster where the CPU has bf16 instructions:
            ``experiments.videoscout_pixel.sft_precision``); with LoRA the frozen base is loaded
            in bf16.
        gradient_checkpointing: Trade compute for memory.
        seed: Seed of shuffling and initialisation.
        logging_steps: Log every N optimizer steps.
        save_steps: Checkpoint every N optimizer steps (0: only at the end).
        progress_bar: Show the trainer's progress bar.
        freeze_vision: Keep the vision tower's blocks as they are (its merger, the
            projection into the language model, still trains): a small model fine-tuned
            on a few hundred turns keeps what its tower learned to see.
        freeze_layers: Keep the first N decoder layers as they are (the pixel VLM's
            letter circuit matches the evidence with the options in layers 0 and 1).
        context: Raise the model's context, its text config's
            ``max_position_embeddings``, to this many positions (0: the checkpoint's).
            Qwen2.5-VL's positions are M-RoPE, computed from the position and not
            learned per position, so this is a config change that the saved checkpoint
            keeps; tool chats longer than the checkpoint was built for need it, and
            ``train trl`` then lets its rollouts grow as long.
    """

    learning_rate: float = 1.5e-5
    epochs: float = 3.0
    batch_size: int = 16
    per_device_batch: int = 1
    warmup_ratio: float = 0.05
    scheduler: str = "cosine"
    max_steps: int = -1
    lora_rank: int = 0
    lora_alpha: int = 32
    bf16: bool = False
    gradient_checkpointing: bool = False
    seed: int = 0
    logging_steps: int = 1
    save_steps: int = 0
    progress_bar: bool = True
    freeze_vision: bool = False
    freeze_layers: int = 0
    context: int = 0

    def __post_init__(self) -> None:
        if self.context < 0:
            raise ConfigError(f"context must be at least 0, got {self.context}")
        if self.freeze_layers < 0:
            raise ConfigError(f"freeze_layers must be at least 0, got {self.freeze_layers}")
        if self.lora_rank and self.freeze_layers:
            raise ConfigError("freeze_layers trains the full model: no LoRA with it")

    def accumulation(self, devices: int = 1) -> int:
        """Gradient-accumulation steps that make the global batch ``batch_size``."""
        per_step = self.per_device_batch * max(devices, 1)
        if self.batch_size % per_step:
            raise ConfigError(
                f"batch_size {self.batch_size} is not a multiple of per-device batch × devices "
                f"({per_step})"
            )
        return self.batch_size // per_step
