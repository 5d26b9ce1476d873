"""The cluster bootstrap interval shared by the bench summary, compare and the reports."""

from __future__ import annotations

import math

from video_env.metrics.bootstrap import cluster_bootstrap_ci


def test_the_interval_holds_the_mean_and_is_reproducible() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    clusters = ["a", "a", "b", "b", "c", "c", "d", "d"]
    low, high = cluster_bootstrap_ci(values, clusters)
    assert low < sum(values) / len(values) < high
    assert (low, high) == cluster_bootstrap_ci(values, clusters)


def test_resampling_videos_widens_the_interval_of_correlated_questions() -> None:
    # Ten videos, each all right or all wrong: per question the interval would be narrow.
    values = [float(v % 2) for v in range(10) for _ in range(20)]
    by_video = [str(v) for v in range(10) for _ in range(20)]
    by_question = [str(i) for i in range(200)]
    video_low, video_high = cluster_bootstrap_ci(values, by_video)
    question_low, question_high = cluster_bootstrap_ci(values, by_question)
    assert video_high - video_low > 2 * (question_high - question_low)


def test_no_values_give_nan() -> None:
    low, high = cluster_bootstrap_ci([], [])
    assert math.isnan(low) and math.isnan(high)
