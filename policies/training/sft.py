"""Cold-start SFT of the VideoScout policy on distilled teacher turns (TRL's ``SFTTrainer``).

Each row of ``turns.jsonl`` (:mod:`policies.training.distill`) is one turn: the prompt
(system prompt, window text + frames, memory + question) and the teacher's reply. The
loss is on the reply only (:func:`~policies.training.turn_inputs.collate_turns`): visual
inputs and the prompt are masked. The collator feeds a turn's frames as one video, as the
policy sees them at inference; TRL's own vision collator also reads the file as is (it
feeds the frames as separate images), which the tests check.

A ``tool_chats.jsonl`` (``video-env train tool-chats``, :mod:`policies.training.tool_chats`)
trains the ``train trl`` route's format instead: whole episodes as TRL's tool-calling
chats, the loss on the assistant turns; the checkpoint keeps the tool chat template.

Defaults are the VideoScout paper's: learning rate 1.5e-5, cosine schedule, 5 % warmup,
batch 16 (per-device batch × gradient accumulation × devices), 3 epochs. LoRA (peft) is
optional for single-GPU users.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from policies.training.checkpointing import checkpointing_setting, checkpointing_used
from policies.training.provenance import (
    THINK_ACT_FORM,
    TOOL_FORM,
    freeze_language_layers,
    freeze_vision_blocks,
    keep_pixel_vlm_marker,
)
from policies.training.sft_extension import SFTExtension
from policies.training.sft_settings import SFTSettings
from policies.training.tool_chats import (
    ToolChatCollator,
    is_tool_chats,
    load_tool_chats,
    max_positions,
    tool_methods,
)
from policies.training.trl_env import tool_chat_processor
from policies.training.turn_inputs import collate_turns, conversation_from_row
from policies.videoscout.record import (
    RULES_FILE,
    save_trained_rules,
    trained_end_note,
    trained_question_first,
    trained_rules,
)
from video_env._optional import require
from video_env.errors import ConfigError
from video_env.run_record import command_line, machine

__all__ = [
    "SFTExtension",
    "SFTResult",
    "SFTSettings",
    "TurnCollator",
    "load_turns",
    "train_sft",
    "with_context",
]

_PURPOSE = "SFT of the VideoScout policy"


@dataclass(frozen=True)
class SFTResult:
    """Where the model went and the loss of every logged step."""

    output_dir: str
    losses: list[float]
    steps: int


class TurnCollator:
    """``SFTTrainer``'s ``data_collator``: rows → inputs as at inference, loss on replies.

    With an ``extension``, a batch also carries the inputs its
    :meth:`~policies.training.sft_extension.SFTExtension.batch_extras` adds (its trainer
    takes them out before the forward pass).
    """

    def __init__(self, processor: Any, extension: SFTExtension | None = None) -> None:
        self.processor = processor
        self.extension = extension

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """Collate a batch of ``turns.jsonl`` rows."""
        batch = collate_turns(self.processor, [conversation_from_row(r) for r in rows])
        if self.extension is not None:
            batch.update(self.extension.batch_extras(rows))
        return batch


def load_turns(path: str | Path, extension: SFTExtension | None = None, seed: int = 0) -> Any:
    """``turns.jsonl`` as a ``datasets.Dataset`` (what ``SFTTrainer`` takes).

    With an ``extension``, its :meth:`~policies.training.sft_extension.SFTExtension.augment`
    rows (seeded with ``seed``), in the file's column types.
    """
    datasets = require("datasets", "train", _PURPOSE)
    dataset = datasets.load_dataset("json", data_files=str(path), split="train")
    if extension is None:
        return dataset
    rows = extension.augment(dataset.to_list(), seed)
    return datasets.Dataset.from_list(rows, features=dataset.features)


def train_sft(
    model_path: str,
    turns: str | Path,
    out: str | Path,
    settings: SFTSettings | None = None,
    *,
    devices: int = 1,
    extension: SFTExtension | None = None,
) -> SFTResult:
    """Fine-tune ``model_path`` on ``turns`` (a ``turns.jsonl``) and save it to ``out``.

    ``out`` then holds a checkpoint (model + processor) that ``TransformersVLM`` and
    ``video-env bench --policies videoscout:qwen2.5-vl:OUT`` load; with LoRA the adapter
    is merged into the weights first. An ``extension`` (Think-Act turns only) adds an
    experiment's rows, batch inputs and loss (:mod:`policies.training.sft_extension`).
    """
    cfg = settings or SFTSettings()
    rules = trained_rules(Path(turns).parent)  # the data's rules are the checkpoint's
    end_note = trained_end_note(Path(turns).parent)  # and so is its prompt
    question_first = trained_question_first(Path(turns).parent)
    (Path(out) / RULES_FILE).unlink(missing_ok=True)  # never an earlier run's record
    trl = require("trl", "train", _PURPOSE)
    transformers = require("transformers", "models", _PURPOSE)
    chats = is_tool_chats(turns)
    if chats and extension is not None:
        raise ConfigError(f"an SFT extension takes Think-Act turns, not tool chats ({turns})")
    dataset = load_tool_chats(turns) if chats else load_turns(turns, extension, cfg.seed)
    rows = dataset.to_list() if extension is not None else []  # the extension's to read
    if extension is not None:
        extension.check(model_path, cfg, rows)
    processor = transformers.AutoProcessor.from_pretrained(model_path, local_files_only=True)
    config = transformers.AutoConfig.from_pretrained(model_path, local_files_only=True)
    built_for = with_context(config, cfg.context)
    # bf16 mixed precision keeps float32 master weights; frozen LoRA bases need no master
    frozen_bf16 = cfg.bf16 and cfg.lora_rank > 0
    model = transformers.AutoModelForImageTextToText.from_pretrained(
        model_path,
        config=config,
        dtype="bfloat16" if frozen_bf16 else "float32",
        local_files_only=True,
    )
    if cfg.freeze_vision:
        freeze_vision_blocks(model)
    freeze_language_layers(model, cfg.freeze_layers)
    start = time.monotonic()
    args = trl.SFTConfig(
        output_dir=str(out),
        learning_rate=cfg.learning_rate,
        num_train_epochs=cfg.epochs,
        max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.per_device_batch,
        gradient_accumulation_steps=cfg.accumulation(devices),
        warmup_steps=cfg.warmup_ratio,  # a float in [0, 1) is a ratio of all steps
        lr_scheduler_type=cfg.scheduler,
        bf16=cfg.bf16,
        seed=cfg.seed,
        logging_steps=cfg.logging_steps,
        save_strategy="steps" if cfg.save_steps else "no",
        save_steps=cfg.save_steps or 500,
        report_to=[],
        remove_unused_columns=False,
        dataset_kwargs={"skip_prepare_dataset": True},
        max_length=None,
        use_cpu=not _cuda(),
        disable_tqdm=not cfg.progress_bar,
        # TRL's own default is on
        **checkpointing_setting(trl.SFTConfig, cfg.gradient_checkpointing),
    )
    trainer_class = extension.trainer_class(trl.SFTTrainer) if extension else trl.SFTTrainer
    trainer = trainer_class(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=processor,
        data_collator=(
            ToolChatCollator(processor, tool_methods(), max_positions(model.config))
            if chats
            else TurnCollator(processor, extension)
        ),
        peft_config=_lora(cfg),
    )
    trainer.train()
    trained = trainer.model
    if cfg.lora_rank:
        trained = trained.merge_and_unload()
    trained.save_pretrained(str(out))
    if chats:  # the tool format it learned, for `train trl` and its rollouts
        tool_chat_processor(processor)
    processor.save_pretrained(str(out))
    logged = [e for e in trainer.state.log_history if "loss" in e]
    losses = [float(e["loss"]) for e in logged]
    record = {
        "settings": asdict(cfg),
        "base": model_path,
        "data": str(turns),
        "rows": len(dataset),
        "steps": int(trainer.state.global_step),
        "gradient_checkpointing": checkpointing_used(args),  # as the trainer ran
        "context": {"base": built_for, "trained": max_positions(model.config)},
        "seconds": round(time.monotonic() - start, 1),
        "machine": machine(),
        "command": command_line(),
        "losses": losses,
        "grad_norms": [e.get("grad_norm") for e in logged],  # before clipping
    }
    if extension is not None:
        record["extension"] = extension.settings()
        record.update(extension.record(trainer.state.log_history, rows))
    (Path(out) / "sft.json").write_text(json.dumps(record, indent=2), "utf-8")
    if rules is not None:
        save_trained_rules(out, rules, end_note=end_note, question_first=question_first)
    keep_pixel_vlm_marker(
        model_path,
        Path(out),
        "sft",
        {k: v for k, v in record.items() if k not in ("losses", "grad_norms")},
        form=TOOL_FORM if chats else THINK_ACT_FORM,
    )
    return SFTResult(str(out), losses, int(trainer.state.global_step))


def with_context(config: Any, positions: int) -> int | None:
    """Raise ``config``'s context to ``positions`` (0: leave it); return what it was.

    Args:
        config: A transformers model config (a VLM's text config is the one changed).
        positions: The ``max_position_embeddings`` wanted.

    Raises:
        ConfigError: ``positions`` is below the checkpoint's own context (lowering it
            would cut what the model was built for), or the config has no context.
    """
    text = config.get_text_config()
    built_for: int | None = getattr(text, "max_position_embeddings", None)
    if not positions:
        return built_for
    if built_for is None:
        raise ConfigError(f"{type(config).__name__} has no max_position_embeddings to raise")
    if positions < built_for:
        raise ConfigError(
            f"context {positions:,} is below the checkpoint's {built_for:,} positions: "
            "it can be raised, not lowered"
        )
    text.max_position_embeddings = positions
    return built_for


def _lora(cfg: SFTSettings) -> Any:
    if not cfg.lora_rank:
        return None
    peft = require("peft", "train", _PURPOSE)
    return peft.LoraConfig(
        r=cfg.lora_rank,
        lora_alpha=cfg.lora_alpha,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        task_type="CAUSAL_LM",
    )


def _cuda() -> bool:
    torch = require("torch", "models", _PURPOSE)
    return bool(torch.cuda.is_available())
