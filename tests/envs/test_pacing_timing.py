"""VideoScout's timing reward: T is the teacher's answer chunk when the sample has one.

The paper's T is the chunk at which a teacher answered (``meta["reference_chunk"]``);
datasets without a teacher fall back to the chunk where the ground-truth evidence ends, a
documented deviation (docs/fidelity.md).
"""

import dataclasses

import numpy as np
import pytest

from video_env import VideoQA
from video_env.actions import AnswerAction, SpeedAction
from video_env.envs import PacingEnv
from video_env.synth import generate_video, video_samples


@pytest.fixture(scope="module")
def sample() -> VideoQA:
    video = generate_video("pace", seed=4, duration=600, n_needles=3)  # 20 chunks of 30 s
    return video_samples(video)[0]


def timing_after_seven_chunks(sample: VideoQA) -> float:
    env = PacingEnv([sample], sensors=())
    env.reset(seed=0, options={"index": 0})
    for _ in range(3):
        env.step(SpeedAction(2))  # chunks passed when answering: M = 7
    assert sample.answer is not None
    _, _, terminated, _, info = env.step(AnswerAction(sample.answer, sample.gt_intervals[0]))
    assert terminated and info["episode"]["reward_parts"]["acc"] == 1.0
    return float(info["episode"]["reward_parts"]["timing"])


@pytest.mark.parametrize("teacher", [2, 7, 12])
def test_timing_uses_the_teachers_reference_chunk(sample: VideoQA, teacher: int) -> None:
    taught = dataclasses.replace(sample, meta={**sample.meta, "reference_chunk": teacher})
    expected = 0.5 * min(7, teacher) / max(7, teacher)
    assert timing_after_seven_chunks(taught) == pytest.approx(expected)


def test_without_a_teacher_t_is_the_chunk_where_the_evidence_ends(sample: VideoQA) -> None:
    assert "reference_chunk" not in sample.meta
    evidence_end = max(iv.end for iv in sample.gt_intervals)
    reference = int(np.ceil(evidence_end / 30))
    assert reference != 7  # the two paths differ on this sample
    expected = 0.5 * min(7, reference) / max(7, reference)
    assert timing_after_seven_chunks(sample) == pytest.approx(expected)
