"""Evaluation metrics: answer accuracy, judges, GToU/IoU, calibration and cost.

Every function here is pure (no I/O, no global state); the definitions follow the source
papers and are spelled out in each module's docstring.
"""

from __future__ import annotations

from video_env.metrics.answers import accuracy, extract_option, mcq_correct, normalize_text
from video_env.metrics.calibration import (
    Bin,
    CalibrationReport,
    ace,
    brier_score,
    calibrated_coverage,
    calibration_report,
    ece,
    mce,
    reliability_bins,
)
from video_env.metrics.cost import Cost, mean_costs
from video_env.metrics.judges import (
    MAX_SCORE,
    Embedder,
    EmbeddingJudge,
    ExactMatchJudge,
    Grade,
    Judge,
    exact_match,
    grade_answer,
)
from video_env.metrics.localization import IntervalLike, gtou, iou, union_length

__all__ = [
    "MAX_SCORE",
    "Bin",
    "CalibrationReport",
    "Cost",
    "Embedder",
    "EmbeddingJudge",
    "ExactMatchJudge",
    "Grade",
    "IntervalLike",
    "Judge",
    "accuracy",
    "ace",
    "brier_score",
    "calibrated_coverage",
    "calibration_report",
    "ece",
    "exact_match",
    "extract_option",
    "grade_answer",
    "gtou",
    "iou",
    "mce",
    "mcq_correct",
    "mean_costs",
    "normalize_text",
    "reliability_bins",
    "union_length",
]
