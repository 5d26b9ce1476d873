"""SFT on distilled turns: reply-only labels, TRL reads the file as is, the loss falls."""

import json
from pathlib import Path
from typing import Any

import pytest

from policies.training.cli import RULES
from video_env.errors import ConfigError

pytest.importorskip("trl")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def turns(smoke_turns: Path) -> Path:
    return smoke_turns


def test_labels_cover_the_reply_only(turns: Path, tiny_qwen_dir: str) -> None:
    from policies.training.turn_inputs import END_OF_TURN, collate_turns, conversation_from_row

    processor = transformers.AutoProcessor.from_pretrained(tiny_qwen_dir)
    rows = [json.loads(line) for line in turns.read_text().splitlines()[:2]]
    batch = collate_turns(processor, [conversation_from_row(r) for r in rows])
    tok = processor.tokenizer
    assert "pixel_values_videos" in batch  # a turn's frames are one video, as at inference
    for i, row in enumerate(rows):
        labelled = batch["labels"][i][batch["labels"][i] != -100].tolist()
        reply = row["completion"][0]["content"] + END_OF_TURN
        assert labelled == tok(reply, add_special_tokens=False)["input_ids"]
        assert tok.decode(labelled) == reply
    visual = {processor.video_token_id, processor.image_token_id}
    ids, labels = batch["input_ids"], batch["labels"]
    assert all(labels[ids == v].eq(-100).all() for v in visual)


@pytest.mark.slow
def test_trl_sft_trainer_reads_the_dataset_as_is(turns: Path, tiny_qwen_dir: str) -> None:
    """TRL's own collator (frames as separate images), no conversion of the file."""
    import datasets
    import trl

    from policies.training.checkpointing import checkpointing_setting

    dataset = datasets.load_dataset("json", data_files=str(turns), split="train")
    processor = transformers.AutoProcessor.from_pretrained(tiny_qwen_dir)
    model = transformers.AutoModelForImageTextToText.from_pretrained(tiny_qwen_dir)
    args = trl.SFTConfig(
        output_dir=str(turns.parent / "trl"), max_steps=1, per_device_train_batch_size=2,
        report_to=[], use_cpu=True, disable_tqdm=True, save_strategy="no", max_length=None,
        **checkpointing_setting(trl.SFTConfig, True),  # TRL's default, by its current name
    )  # fmt: skip
    trainer = trl.SFTTrainer(model=model, args=args, train_dataset=dataset,
                             processing_class=processor)  # fmt: skip
    batch = next(iter(trainer.get_train_dataloader()))
    assert "pixel_values" in batch and (batch["labels"] != -100).any()
    assert (batch["labels"] == -100).sum() > (batch["labels"] != -100).sum()  # prompt masked
    trainer.train()
    (logged,) = [e for e in trainer.state.log_history if "train_loss" in e]
    assert logged["train_loss"] > 0


@pytest.mark.slow
def test_sft_loss_falls(turns: Path, tmp_path: Path) -> None:
    from policies.training.sft import SFTSettings, train_sft
    from video_env.backends.testing import tiny_qwen2_5_vl

    base = tiny_qwen2_5_vl(tmp_path / "base", init_range=0.02)
    settings = SFTSettings(learning_rate=3e-3, batch_size=2, per_device_batch=2, max_steps=6,
                           warmup_ratio=0.0, scheduler="constant", progress_bar=False)  # fmt: skip
    result = train_sft(str(base), turns, tmp_path / "sft", settings)
    assert result.steps == 6 and len(result.losses) == 6
    assert result.losses[-1] < result.losses[0] - 0.5
    reloaded = transformers.AutoModelForImageTextToText.from_pretrained(tmp_path / "sft")
    assert reloaded is not None and (tmp_path / "sft" / "sft.json").exists()


def test_a_pixel_vlm_keeps_its_tower_and_its_provenance_through_sft(
    turns: Path, tmp_path: Path
) -> None:
    import torch
    from safetensors.torch import load_file

    from policies.training.sft import SFTSettings, train_sft
    from video_env.backends.testing import tiny_qwen2_5_vl
    from video_env.pixel import PIXEL_VLM_MARKER, is_pixel_vlm

    base = tiny_qwen2_5_vl(tmp_path / "base", init_range=0.02)
    (base / PIXEL_VLM_MARKER).write_text(json.dumps({"recipe": {"seed": 7}}))
    settings = SFTSettings(learning_rate=3e-3, batch_size=2, per_device_batch=2, max_steps=2,
                           warmup_ratio=0.0, scheduler="constant", progress_bar=False,
                           freeze_vision=True)  # fmt: skip
    train_sft(str(base), turns, tmp_path / "sft", settings)
    before = load_file(base / "model.safetensors")
    after = load_file(tmp_path / "sft" / "model.safetensors")
    tower = [k for k in before if "visual." in k and "merger." not in k]
    merger = [k for k in before if "visual.merger." in k]
    assert tower and merger
    assert all(torch.equal(before[k], after[k]) for k in tower), "the tower's blocks are kept"
    assert any(not torch.equal(before[k], after[k]) for k in merger), "the merger trains"
    assert is_pixel_vlm(tmp_path / "sft")
    meta = json.loads((tmp_path / "sft" / PIXEL_VLM_MARKER).read_text())
    assert meta["continued_from"] == {"recipe": {"seed": 7}}
    assert meta["sft"]["steps"] == 2 and meta["sft"]["settings"]["freeze_vision"]
    assert meta["sft"]["gradient_checkpointing"] is False, "TRL's default (on) is overridden"
    assert meta["sft"]["rows"] == len(turns.read_text().splitlines())
    assert meta["sft"]["seconds"] > 0 and meta["sft"]["machine"]["cpus"]
    from policies.videoscout.record import trained_rules

    assert trained_rules(tmp_path / "sft") == RULES["cpu-smoke"]()  # the data's, kept


class DoubledTurns:
    """An SFT extension that trains on every turn twice and records its steps."""

    def settings(self) -> dict[str, Any]:
        return {"copies": 2}

    def augment(self, rows: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
        return rows + rows

    def check(self, model_path: str, settings: Any, rows: list[dict[str, Any]]) -> None:
        if settings.lora_rank:
            raise ConfigError("no LoRA with doubled turns")

    def batch_extras(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        return {}

    def trainer_class(self, base: type) -> type:
        return base

    def record(
        self, log_history: list[dict[str, Any]], rows: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return {"logged": sum("loss" in e for e in log_history), "trained_rows": len(rows)}


def test_an_extension_adds_its_rows_its_checks_and_its_record(turns: Path, tmp_path: Path) -> None:
    from policies.training.sft import SFTSettings, train_sft

    settings = SFTSettings(batch_size=2, per_device_batch=2, max_steps=2, progress_bar=False)
    train_sft(str(_base(tmp_path)), turns, tmp_path / "sft", settings, extension=DoubledTurns())
    record = json.loads((tmp_path / "sft" / "sft.json").read_text())
    assert record["rows"] == 2 * len(turns.read_text().splitlines())
    assert record["extension"] == {"copies": 2} and record["logged"] == 2
    assert record["trained_rows"] == record["rows"]
    lora = SFTSettings(lora_rank=4, max_steps=1, progress_bar=False)
    with pytest.raises(ConfigError, match="no LoRA"):
        train_sft(str(_base(tmp_path)), turns, tmp_path / "lora", lora, extension=DoubledTurns())


def _base(tmp_path: Path) -> Path:
    from video_env.backends.testing import tiny_qwen2_5_vl

    folder = tmp_path / "base"
    return folder if folder.is_dir() else tiny_qwen2_5_vl(folder, init_range=0.02)
