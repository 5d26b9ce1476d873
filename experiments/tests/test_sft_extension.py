"""The VideoScout-pixel recipe's SFT additions through the library's SFT extension."""

import json
from pathlib import Path

import pytest

from experiments.videoscout_pixel.option_orders import with_option_orders
from experiments.videoscout_pixel.recovery_turns import with_recovery_turns
from experiments.videoscout_pixel.sft_extension import PixelTurnExtension
from policies.training.cli import RULES

pytest.importorskip("trl")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def turns(smoke_turns: Path) -> Path:
    return smoke_turns


def test_the_recipes_extension_trains_on_option_orders_and_recovery_turns(
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
    extension = PixelTurnExtension(option_orders=4, recovery_turns=0.5,
                                   recovery_failures=("cut", "speed"))  # fmt: skip
    train_sft(str(base), turns, tmp_path / "sft", settings, extension=extension)
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
    rows = [json.loads(line) for line in turns.read_text().splitlines()]
    rotated = with_option_orders(rows, 4)
    assert len(rotated) > len(rows), "the MCQ answers in every option order"
    recovered = with_recovery_turns(rotated, 0.5, failures=("cut", "speed"))
    assert meta["sft"]["rows"] == len(recovered) > len(rotated), "and recovery turns"
    assert meta["sft"]["extension"]["recovery_failures"] == ["cut", "speed"]
    assert meta["sft"]["seconds"] > 0 and meta["sft"]["machine"]["cpus"]
    from policies.videoscout_record import trained_rules

    assert trained_rules(tmp_path / "sft") == RULES["cpu-smoke"]()  # the data's, kept
