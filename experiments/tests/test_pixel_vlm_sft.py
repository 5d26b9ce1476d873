"""A short SFT teaches the real pixel VLM VideoScout's Think-Act format.

The shipped pixel VLM was trained on FALCON-Bench prompts only and never writes a
Think-Act reply; 159 steps of SFT (three passes over a scripted frame teacher's 106
turns of four training videos) must make most of its replies on *validation* videos
parse. The frames are small (4 frames of 112x56 a window) so the test fits a few minutes
of two CPU cores; the format, not the reading of the frames, is what it checks. (One
video's 30 turns ten times over fits them, loss 0.1, and still leaves 2 of 18
validation replies valid: the format generalises from several videos, not from many
passes.)

It is the laboratory's slowest test, about 5 minutes, and compute-bound:
``python -m benchmarks.perf.sft_step`` counts 71 GFLOP a step (a row is about 1,490
positions, 1,184 of them the system prompt every row shares), 11 TFLOP for the 159
steps, whose floor at this machine's float32 matrix-product rate is about 2 minutes on
one core.
"""

from pathlib import Path

import pytest

from experiments.videoscout_pixel.frame_teacher import FrameScriptedTeacher
from policies.episode_settings import EpisodeSettings
from policies.training.cli import split_samples
from policies.training.distill import DistillConfig, distill
from policies.training.episodes import format_valid, run_recorded_episode
from video_env.envs.pacing_rules import PacingRules, SpeedSpec
from video_env.types import VideoQA

pytest.importorskip("trl")
pytest.importorskip("transformers")

SMALL = PacingRules(
    speeds={1: SpeedSpec(4, 112, 1, 56), 2: SpeedSpec(4, 112, 2, 56), 4: SpeedSpec(2, 112, 4, 56)},
    rewatch=SpeedSpec(4, 112, 1, 56),
)


def _valid_share(model: str, validation: list[VideoQA], max_turns: int = 3) -> float:
    from video_env.backends.transformers_vlm import TransformersVLM

    vlm = TransformersVLM(model, device="cpu")
    valid: list[bool] = []
    for i, sample in enumerate(validation):
        run = run_recorded_episode(
            vlm,
            sample,
            EpisodeSettings(rules=SMALL, max_turns=max_turns, max_new_tokens=96),
            seed=i,
        )
        valid.extend(format_valid(turn.reply) for turn in run.turns)
    return sum(valid) / len(valid)


@pytest.mark.slow
def test_a_short_sft_raises_the_pixel_vlms_format_valid_rate_on_validation_videos(
    tmp_path: Path,
) -> None:
    from policies.training.sft import SFTSettings, train_sft
    from video_env.pixel import PIXEL_VLM_DIR

    data = tmp_path / "distilled"
    teacher = FrameScriptedTeacher(SMALL, style="scenes")
    distill(
        teacher, split_samples("train", 4), data, DistillConfig(tries=1).with_episode(rules=SMALL)
    )
    # seed 0's data order reaches 0.83 here; other orders land between 0.50 (seed 1) and
    # 0.88 (seed 2): the seed is named, not left to SFTSettings' default
    settings = SFTSettings(learning_rate=3e-3, epochs=3, batch_size=2, per_device_batch=2,
                           progress_bar=False, freeze_vision=True, seed=0)  # fmt: skip
    train_sft(str(PIXEL_VLM_DIR), data / "turns.jsonl", tmp_path / "sft", settings)
    validation = split_samples("calib", 2)[::3]  # two videos the SFT never saw
    assert {bool(s.options) for s in validation} == {True, False}
    assert len({s.id.split("/")[0] for s in validation}) == 2
    before = _valid_share(str(PIXEL_VLM_DIR), validation)
    after = _valid_share(str(tmp_path / "sft"), validation)
    assert before < 0.2, f"the base model already writes the format ({before:.2f})"
    assert after >= 0.6, f"format-valid share after SFT {after:.2f} (before {before:.2f})"
