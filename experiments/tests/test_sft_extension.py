"""The VideoScout-pixel recipe's SFT additions through the library's SFT extension."""

import json
from pathlib import Path

import pytest

from experiments.videoscout_pixel.option_orders import with_option_orders
from experiments.videoscout_pixel.recovery_turns import with_recovery_turns
from experiments.videoscout_pixel.sft_extension import PixelTurnExtension

pytest.importorskip("trl")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def turns(smoke_turns: Path) -> Path:
    return smoke_turns


def test_the_recipes_extension_trains_on_option_orders_and_recovery_turns(
    turns: Path, tmp_path: Path
) -> None:
    """The rows the run trained on are the extension's, and its record says so."""
    from policies.training.sft import SFTSettings, train_sft
    from video_env.backends.testing import tiny_qwen2_5_vl

    base = tiny_qwen2_5_vl(tmp_path / "base", init_range=0.02)
    settings = SFTSettings(batch_size=2, per_device_batch=2, max_steps=1, progress_bar=False)
    extension = PixelTurnExtension(option_orders=4, recovery_turns=0.5,
                                   recovery_failures=("cut", "speed"))  # fmt: skip
    train_sft(str(base), turns, tmp_path / "sft", settings, extension=extension)
    record = json.loads((tmp_path / "sft" / "sft.json").read_text())
    rows = [json.loads(line) for line in turns.read_text().splitlines()]
    rotated = with_option_orders(rows, 4)
    assert len(rotated) > len(rows), "the MCQ answers in every option order"
    recovered = with_recovery_turns(rotated, 0.5, failures=("cut", "speed"))
    assert record["rows"] == len(recovered) > len(rotated), "and recovery turns"
    assert record["extension"]["recovery_failures"] == ["cut", "speed"]
    assert record["extension"]["option_orders"] == 4 and "binding" not in record
