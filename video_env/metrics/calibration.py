"""Confidence calibration: reliability bins, ACE, MCE, ECE, CC@τ and the Brier score.

Confidences ``c_i ∈ [0, 1]`` are split into ``n_bins`` equal-width bins; bin ``k`` holds the
samples with ``k ≤ c_i · n_bins < k + 1`` (``c_i = 1`` goes to the last bin). For a bin,
``conf`` is the mean confidence and ``acc`` the fraction correct of its samples.

* ACE (average calibration error) = unweighted mean over non-empty bins of ``|conf − acc|``.
* MCE (maximum calibration error) = max over non-empty bins of ``|conf − acc|``.
* ECE (expected calibration error) = mean of ``|conf − acc|`` weighted by bin counts.
* CC@τ (calibrated coverage) = ``(N_top / N) · (1 − |C_top − A_top|)``, where the *top* set
  is the samples with confidence ``≥ τ``, ``N_top`` its size, ``C_top`` its mean confidence
  and ``A_top`` its accuracy; 0 when the top set is empty. With 10 bins and τ = 0.9 the top
  set is exactly the last reliability bin.
* Brier score = ``mean((c_i − y_i)²)`` with ``y_i ∈ {0, 1}``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from video_env.errors import ConfigError

__all__ = [
    "Bin",
    "CalibrationReport",
    "ace",
    "brier_score",
    "calibrated_coverage",
    "calibration_report",
    "ece",
    "mce",
    "reliability_bins",
]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Bin:
    """One reliability bin ``[lo, hi)`` (the last one closed).

    Args:
        lo: Lower confidence edge.
        hi: Upper confidence edge.
        count: Number of samples in the bin.
        mean_conf: Mean confidence of those samples (``nan`` when empty).
        accuracy: Fraction of them that is correct (``nan`` when empty).
    """

    lo: float
    hi: float
    count: int
    mean_conf: float
    accuracy: float

    @property
    def gap(self) -> float:
        """``|mean_conf − accuracy|`` (``nan`` when empty)."""
        return abs(self.mean_conf - self.accuracy)


@dataclass(frozen=True)
class CalibrationReport:
    """All calibration numbers of one set of predictions.

    Args:
        n: Number of predictions.
        n_bins: Number of reliability bins.
        tau: Threshold of the calibrated coverage.
        accuracy: Fraction correct.
        mean_confidence: Mean confidence.
        ace: Average calibration error.
        mce: Maximum calibration error.
        ece: Expected (count-weighted) calibration error.
        brier: Brier score.
        cc: Calibrated coverage at ``tau``.
        bins: The reliability bins, empty ones included.
    """

    n: int
    n_bins: int
    tau: float
    accuracy: float
    mean_confidence: float
    ace: float
    mce: float
    ece: float
    brier: float
    cc: float
    bins: tuple[Bin, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (bins as a list of dicts)."""
        record = asdict(self)
        record["bins"] = [asdict(b) for b in self.bins]
        return record


def _arrays(confidences: npt.ArrayLike, correct: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    conf = np.asarray(confidences, dtype=np.float64)
    hits = np.asarray(correct)
    if conf.ndim != 1 or hits.shape != conf.shape:
        raise ConfigError(
            f"confidences and correct must be 1-D and of equal length, got shapes "
            f"{conf.shape} and {hits.shape}"
        )
    if conf.size == 0:
        raise ConfigError("calibration needs at least one prediction")
    if not np.all((conf >= 0.0) & (conf <= 1.0)):
        raise ConfigError("confidences must be finite numbers in [0, 1]")
    if hits.dtype != np.bool_ and not np.all((hits == 0) | (hits == 1)):
        raise ConfigError("correct must hold booleans or 0/1 values")
    return conf, hits.astype(np.float64)


def _check_n_bins(n_bins: int) -> None:
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ConfigError(f"n_bins must be a positive integer, got {n_bins!r}")


def reliability_bins(
    confidences: npt.ArrayLike, correct: npt.ArrayLike, n_bins: int = 10
) -> list[Bin]:
    """Split predictions into equal-width confidence bins.

    Args:
        confidences: Confidence of each prediction, in ``[0, 1]``.
        correct: Whether each prediction is correct (booleans or 0/1).
        n_bins: Number of bins.

    Returns:
        All ``n_bins`` bins in increasing confidence, empty ones included.

    Raises:
        ConfigError: On empty, mismatched or out-of-range inputs, or a bad ``n_bins``.
    """
    _check_n_bins(n_bins)
    conf, hits = _arrays(confidences, correct)
    index = np.minimum(np.floor(conf * n_bins).astype(np.int64), n_bins - 1)
    bins: list[Bin] = []
    for k in range(n_bins):
        mask = index == k
        count = int(mask.sum())
        mean_conf = float(conf[mask].mean()) if count else math.nan
        acc = float(hits[mask].mean()) if count else math.nan
        bins.append(Bin(k / n_bins, (k + 1) / n_bins, count, mean_conf, acc))
    return bins


def _gaps(bins: list[Bin]) -> list[float]:
    return [b.gap for b in bins if b.count]


def ace(confidences: npt.ArrayLike, correct: npt.ArrayLike, n_bins: int = 10) -> float:
    """Average calibration error: mean over non-empty bins of ``|conf − acc|``.

    Takes the arguments of :func:`reliability_bins` (and raises its errors).

    Returns:
        ACE in ``[0, 1]``.
    """
    gaps = _gaps(reliability_bins(confidences, correct, n_bins))
    return sum(gaps) / len(gaps)


def mce(confidences: npt.ArrayLike, correct: npt.ArrayLike, n_bins: int = 10) -> float:
    """Maximum calibration error: max over non-empty bins of ``|conf − acc|``.

    Takes the arguments of :func:`reliability_bins` (and raises its errors).

    Returns:
        MCE in ``[0, 1]``.
    """
    return max(_gaps(reliability_bins(confidences, correct, n_bins)))


def ece(confidences: npt.ArrayLike, correct: npt.ArrayLike, n_bins: int = 10) -> float:
    """Expected calibration error: ``Σ_k (n_k / N) · |conf_k − acc_k|``.

    Takes the arguments of :func:`reliability_bins` (and raises its errors).

    Returns:
        ECE in ``[0, 1]``.
    """
    bins = reliability_bins(confidences, correct, n_bins)
    total = sum(b.count for b in bins)
    return sum(b.count * b.gap for b in bins if b.count) / total


def brier_score(confidences: npt.ArrayLike, correct: npt.ArrayLike) -> float:
    """Brier score: ``mean((c_i − y_i)²)``, with ``y_i = 1`` for a correct prediction.

    Args:
        confidences: Confidence of each prediction, in ``[0, 1]``.
        correct: Whether each prediction is correct.

    Returns:
        The score in ``[0, 1]``; lower is better.
    """
    conf, hits = _arrays(confidences, correct)
    return float(np.mean((conf - hits) ** 2))


def calibrated_coverage(
    confidences: npt.ArrayLike, correct: npt.ArrayLike, tau: float = 0.9
) -> float:
    """Calibrated coverage CC@τ = ``(N_top / N) · (1 − |C_top − A_top|)``.

    The top set is the predictions with confidence ``≥ tau``; ``C_top`` and ``A_top`` are
    its mean confidence and accuracy. High when many predictions are confident *and* those
    confidences are honest.

    Args:
        confidences: Confidence of each prediction, in ``[0, 1]``.
        correct: Whether each prediction is correct.
        tau: Confidence threshold in ``[0, 1]``.

    Returns:
        CC@τ in ``[0, 1]``; 0 when no prediction reaches ``tau``.

    Raises:
        ConfigError: On bad inputs or ``tau`` outside ``[0, 1]``.
    """
    if isinstance(tau, bool) or not 0.0 <= float(tau) <= 1.0:
        raise ConfigError(f"tau must lie in [0, 1], got {tau!r}")
    conf, hits = _arrays(confidences, correct)
    top = conf >= tau
    n_top = int(top.sum())
    if n_top == 0:
        return 0.0
    gap = abs(float(conf[top].mean()) - float(hits[top].mean()))
    return n_top / conf.size * (1.0 - gap)


def calibration_report(
    confidences: npt.ArrayLike, correct: npt.ArrayLike, n_bins: int = 10, tau: float = 0.9
) -> CalibrationReport:
    """Compute every calibration number at once.

    Args:
        confidences: Confidence of each prediction, in ``[0, 1]``.
        correct: Whether each prediction is correct.
        n_bins: Number of equal-width bins.
        tau: Threshold of the calibrated coverage.

    Returns:
        The report.

    Raises:
        ConfigError: On empty, mismatched or out-of-range inputs, or bad settings.
    """
    conf, hits = _arrays(confidences, correct)
    bins = reliability_bins(conf, hits, n_bins)
    gaps = _gaps(bins)
    return CalibrationReport(
        n=int(conf.size),
        n_bins=n_bins,
        tau=float(tau),
        accuracy=float(hits.mean()),
        mean_confidence=float(conf.mean()),
        ace=sum(gaps) / len(gaps),
        mce=max(gaps),
        ece=sum(b.count * b.gap for b in bins if b.count) / conf.size,
        brier=brier_score(conf, hits),
        cc=calibrated_coverage(conf, hits, tau),
        bins=tuple(bins),
    )
