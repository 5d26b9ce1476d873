import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from video_env import ConfigError
from video_env.metrics import (
    ace,
    brier_score,
    calibrated_coverage,
    calibration_report,
    ece,
    mce,
    reliability_bins,
)

CONF = [0.95, 0.95, 0.85, 0.15]
HITS = [True, False, True, False]


def test_reliability_bins_hand_computed() -> None:
    bins = reliability_bins(CONF, HITS)
    assert len(bins) == 10
    assert [b.count for b in bins] == [0, 1, 0, 0, 0, 0, 0, 0, 1, 2]
    assert bins[9].lo == pytest.approx(0.9) and bins[9].hi == 1.0
    assert bins[9].mean_conf == pytest.approx(0.95) and bins[9].accuracy == 0.5
    assert bins[8].accuracy == 1.0 and bins[1].accuracy == 0.0
    assert math.isnan(bins[0].mean_conf) and math.isnan(bins[0].accuracy)


def test_bin_edges_follow_lower_inclusive_rule() -> None:
    bins = reliability_bins([0.0, 0.3, 0.7, 0.999, 1.0], [1, 1, 1, 1, 1])
    assert [b.count for b in bins] == [1, 0, 0, 1, 0, 0, 0, 1, 0, 2]
    assert [b.count for b in reliability_bins([0.5, 0.49], [0, 1], n_bins=2)] == [1, 1]


def test_errors_hand_computed() -> None:
    # gaps: bin 9 |0.95 - 0.5| = 0.45, bin 8 |0.85 - 1| = 0.15, bin 1 |0.15 - 0| = 0.15
    assert ace(CONF, HITS) == pytest.approx((0.45 + 0.15 + 0.15) / 3)
    assert mce(CONF, HITS) == pytest.approx(0.45)
    assert ece(CONF, HITS) == pytest.approx((2 * 0.45 + 0.15 + 0.15) / 4)
    assert brier_score(CONF, HITS) == pytest.approx((0.05**2 + 0.95**2 + 0.15**2 + 0.15**2) / 4)
    # top set (conf >= 0.9): 2 of 4, mean conf 0.95, accuracy 0.5
    assert calibrated_coverage(CONF, HITS, 0.9) == pytest.approx(0.5 * (1 - 0.45))
    # top set (conf >= 0.8): 3 of 4, mean conf 0.25 * 11 / 3, accuracy 2 / 3
    expected = 0.75 * (1 - abs(2.75 / 3 - 2 / 3))
    assert calibrated_coverage(CONF, HITS, 0.8) == pytest.approx(expected)
    assert calibrated_coverage(CONF, HITS, 0.99) == 0.0


def test_perfect_and_worst_predictions() -> None:
    assert ace([1.0, 0.0], [1, 0]) == 0.0
    assert brier_score([1.0, 0.0], [1, 0]) == 0.0
    assert calibrated_coverage([1.0, 1.0], [1, 1]) == 1.0
    assert mce([1.0, 0.0], [0, 1]) == 1.0
    assert brier_score([1.0, 0.0], [0, 1]) == 1.0


def test_report_matches_the_single_functions() -> None:
    report = calibration_report(CONF, HITS, n_bins=10, tau=0.9)
    assert report.n == 4 and report.n_bins == 10 and report.tau == 0.9
    assert report.accuracy == 0.5
    assert report.mean_confidence == pytest.approx(0.725)
    assert report.ace == pytest.approx(ace(CONF, HITS))
    assert report.mce == pytest.approx(mce(CONF, HITS))
    assert report.ece == pytest.approx(ece(CONF, HITS))
    assert report.brier == pytest.approx(brier_score(CONF, HITS))
    assert report.cc == pytest.approx(calibrated_coverage(CONF, HITS, 0.9))
    record = report.to_dict()
    assert record["bins"][9]["count"] == 2 and len(record["bins"]) == 10


@pytest.mark.parametrize(
    ("conf", "hits"),
    [([], []), ([0.5], [1, 0]), ([1.5], [1]), ([math.nan], [1]), ([0.5], [2]), ([[0.5]], [[1]])],
)
def test_bad_inputs_raise(conf: list[float], hits: list[int]) -> None:
    with pytest.raises(ConfigError):
        calibration_report(conf, hits)


def test_bad_settings_raise() -> None:
    with pytest.raises(ConfigError, match="n_bins"):
        reliability_bins([0.5], [1], n_bins=0)
    with pytest.raises(ConfigError, match="n_bins"):
        reliability_bins([0.5], [1], n_bins=True)
    with pytest.raises(ConfigError, match="tau"):
        calibrated_coverage([0.5], [1], tau=1.5)


unit = st.floats(min_value=0, max_value=1, allow_nan=False)
samples = st.lists(st.tuples(unit, st.booleans()), min_size=1, max_size=50)


@given(samples, st.integers(min_value=1, max_value=20), unit)
def test_calibration_invariants(pairs: list[tuple[float, bool]], n_bins: int, tau: float) -> None:
    conf = np.array([c for c, _ in pairs])
    hits = np.array([h for _, h in pairs])
    report = calibration_report(conf, hits, n_bins=n_bins, tau=tau)
    assert 0.0 <= report.ace <= report.mce + 1e-12 <= 1.0 + 1e-12
    assert report.ece <= report.mce + 1e-12
    assert 0.0 <= report.brier <= 1.0
    assert 0.0 <= report.cc <= 1.0
    assert sum(b.count for b in report.bins) == len(pairs)
