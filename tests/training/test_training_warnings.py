"""Our training code warns of nothing it chose: current names, TRL's expected notice filtered.

transformers 5 warns when ``gradient_checkpointing`` is set (its old name of
``activation_checkpointing``), and TRL's configs set it by default; TRL warns that
``environment_factory`` is experimental on every trainer made with it.
"""

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest.importorskip("trl")
transformers = pytest.importorskip("transformers")

T = TypeVar("T")


def caught(call: Callable[[], T]) -> tuple[T, list[str]]:
    """``call()``'s result and the messages of every warning it raised."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in seen]


def ours(messages: list[str]) -> list[str]:
    """The warnings our code could have avoided: an old name, TRL's experimental notice."""
    return [m for m in messages if "gradient_checkpointing" in m or "environment_factory" in m]


def test_sft_passes_the_current_checkpointing_name(smoke_turns: Path, tmp_path: Path) -> None:
    import json

    from policies.training.sft import SFTSettings, train_sft
    from video_env.backends.testing import tiny_qwen2_5_vl
    from video_env.pixel import PIXEL_VLM_MARKER

    base = tiny_qwen2_5_vl(tmp_path / "base", init_range=0.02)
    (base / PIXEL_VLM_MARKER).write_text("{}")  # the record of what the trainer ran
    for on in (True, False):
        settings = SFTSettings(batch_size=2, per_device_batch=2, max_steps=1, progress_bar=False,
                               gradient_checkpointing=on)  # fmt: skip
        out = tmp_path / f"sft-{on}"
        _, messages = caught(lambda: train_sft(str(base), smoke_turns, out, settings))  # noqa: B023
        assert not ours(messages), messages
        meta = json.loads((out / PIXEL_VLM_MARKER).read_text())
        assert meta["sft"]["gradient_checkpointing"] is on


def test_trl_grpo_config_and_trainer_warn_of_neither(tiny_qwen_dir: str, tmp_path: Path) -> None:
    from policies.training.trl_grpo import build_trl_trainer, trl_dapo_config
    from video_env.synth.suites import load_suite

    config, messages = caught(lambda: trl_dapo_config(tmp_path / "out", use_cpu=True))
    assert not ours(messages), messages
    assert config.activation_checkpointing is True  # TRL's default, kept
    off, messages = caught(
        lambda: trl_dapo_config(tmp_path / "off", use_cpu=True, gradient_checkpointing=False)
    )
    assert not ours(messages) and off.activation_checkpointing is False
    processor = transformers.AutoProcessor.from_pretrained(tiny_qwen_dir)
    model = transformers.AutoModelForImageTextToText.from_pretrained(tiny_qwen_dir)
    samples = load_suite("synth-tiny", limit=1)
    small: dict[str, Any] = {"num_generations": 2, "per_device_train_batch_size": 2,
                             "max_completion_length": 16, "max_tool_calling_iterations": 1,
                             "save_strategy": "no", "logging_steps": 1}  # fmt: skip
    config = trl_dapo_config(tmp_path / "trainer", use_cpu=True, max_steps=1, **small)
    trainer, messages = caught(lambda: build_trl_trainer(model, processor, samples, config))
    assert not ours(messages), messages
    _, messages = caught(trainer.train)  # TRL's rollouts call the models' old names
    assert not ours(messages), messages
    assert trainer.state.global_step == 1
