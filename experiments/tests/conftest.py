"""The laboratory's test fixtures: the library's shared ones, and a fresh pixel VLM.

And the library's hook that names a test still running after a minute (``still_running``).
"""

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from shared_fixtures import (  # noqa: F401 (fixtures are found by their names here)
    RuleLLM,
    _model_output_cache,
    bench_records,
    checker_warnings,
    coded_video,
    smoke_turns,
    tiny_clip_dir,
    tiny_qwen_dir,
)
from still_running import pytest_runtest_protocol  # noqa: F401 (a hook: names a long test)


@pytest.fixture(scope="module")
def pixel_vlm_setup() -> tuple[Any, Any, Any]:
    """A fresh pixel VLM (random weights), its processor, and a frame bank of one video.

    Module-scoped: tests that train the model change only their own module's copy.
    """
    pytest.importorskip("transformers")
    import numpy as np

    from experiments.pixel_models.vlm_checkpoint import build_processor, new_model, new_tokenizer
    from experiments.pixel_models.vlm_data import FrameBank
    from video_env.pixel.splits import split_videos

    bank = FrameBank()
    bank.add_video(split_videos("train", 1)[0], np.random.default_rng(0), empty=2)
    tokenizer = new_tokenizer()
    return new_model(tokenizer, 0), build_processor(tokenizer), bank
