"""The context study: VideoScout's fresh chat per window against TRL's growing chat."""

from pathlib import Path

import pytest

from experiments.videoscout_pixel.trl_context import ContextCount, count_contexts, format_table
from policies.training.cli import RULES
from policies.training.trl_env import tool_chat_processor
from video_env.synth.suites import load_suite

SMOKE = RULES["cpu-smoke"]()


def test_the_tool_chat_grows_by_each_window_while_the_think_act_prompt_does_not(
    tmp_path: Path,
) -> None:
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("trl")
    from video_env.backends.testing import tiny_qwen2_5_vl

    processor = tool_chat_processor(
        transformers.AutoProcessor.from_pretrained(tiny_qwen2_5_vl(tmp_path / "m"))
    )
    (sample,) = load_suite("synth-tiny", limit=1)
    count = count_contexts(processor, sample, SMOKE, speed=1, limit=10**6)
    assert len(count.think_act) == len(count.trl) > 2  # one prompt per window to the end
    growth = [b - a for a, b in zip(count.trl, count.trl[1:], strict=False)]
    assert max(count.think_act) - min(count.think_act) < min(growth)  # a fresh chat stays flat
    assert count.trl[0] > count.think_act[0]  # the tools' schemas come on top
    assert count.trl_windows == len(count.trl)
    capped = ContextCount(count.sample_id, 1, count.think_act, count.trl, count.trl[1] + 1)
    assert capped.trl_windows == 2  # the third result would pass the limit: TRL ends there
    table = format_table([capped])
    assert table[2].startswith("| 1x | ") and table[2].endswith(" | 2 |")
    assert "limit" in table[0]


def test_the_long_context_benchmark_times_each_length_past_the_models_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transformers = pytest.importorskip("transformers")
    from benchmarks.perf import long_context_step
    from video_env.backends.testing import tiny_qwen2_5_vl

    model = str(tiny_qwen2_5_vl(tmp_path / "m"))
    text_config = transformers.AutoConfig.from_pretrained(model).get_text_config()
    longest = text_config.max_position_embeddings + 16
    assert long_context_step.main(["--model", model, "--lengths", "8", str(longest),
                                   "--repeats", "1"]) == 0  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert f"run at up to {longest:,}" in out[0]
    assert out[1].split()[0] == "8" and out[1].endswith("1.0x the 8-position step")
    assert out[2].split()[0] == f"{longest:,}" and len(out) == 3
