import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from video_env import ConfigError, Interval
from video_env.metrics import gtou, iou, union_length


def test_gtou_hand_computed() -> None:
    gt = [Interval(10, 20)]
    assert gtou(gt, Interval(12, 18)) == 1.0
    assert gtou(gt, Interval(10, 20)) == 1.0
    assert gtou(gt, Interval(15, 30)) == pytest.approx(10 / 20)
    assert gtou(gt, Interval(0, 40)) == pytest.approx(10 / 40)
    assert gtou(gt, Interval(30, 40)) == 0.0
    assert gtou(gt, Interval(20, 30)) == 0.0  # touching at one point only
    assert gtou(gt, None) == 0.0


def test_iou_hand_computed() -> None:
    gt = [Interval(10, 20)]
    assert iou(gt, Interval(10, 20)) == 1.0
    assert iou(gt, Interval(12, 18)) == pytest.approx(6 / 10)
    assert iou(gt, Interval(15, 30)) == pytest.approx(5 / 20)
    assert iou(gt, Interval(0, 40)) == pytest.approx(10 / 40)
    assert iou(gt, Interval(30, 40)) == 0.0
    assert iou(gt, Interval(20, 30)) == 0.0
    assert iou(gt, None) == 0.0


def test_several_ground_truth_intervals_form_one_set() -> None:
    gt = [Interval(0, 10), Interval(20, 30)]
    assert union_length(gt) == 20
    # union with [5, 25] is [0, 30]; the intersection is [5, 10] + [20, 25]
    assert gtou(gt, Interval(5, 25)) == pytest.approx(20 / 30)
    assert iou(gt, Interval(5, 25)) == pytest.approx(10 / 30)
    # a window inside one of the intervals scores 1, whatever the others
    assert gtou(gt, Interval(22, 28)) == 1.0
    assert iou(gt, Interval(22, 28)) == pytest.approx(6 / 20)
    # a window in the gap hits nothing
    assert gtou(gt, Interval(12, 18)) == 0.0


def test_overlapping_ground_truth_is_counted_once() -> None:
    gt = [Interval(0, 10), Interval(5, 15)]
    assert union_length(gt) == 15
    assert gtou(gt, Interval(0, 15)) == 1.0
    assert iou(gt, Interval(0, 15)) == 1.0
    assert gtou(gt, Interval(10, 30)) == pytest.approx(15 / 30)


def test_zero_length_cases() -> None:
    gt = [Interval(10, 20)]
    assert gtou(gt, Interval(15, 15)) == 1.0
    assert iou(gt, Interval(15, 15)) == 0.0
    assert gtou(gt, Interval(20, 20)) == 1.0  # closed interval: the end counts
    assert gtou(gt, Interval(25, 25)) == 0.0
    point = [Interval(15, 15)]
    assert gtou(point, Interval(10, 20)) == 0.0
    assert iou(point, Interval(10, 20)) == 0.0
    assert gtou(point, Interval(15, 15)) == 1.0
    assert iou(point, Interval(15, 15)) == 1.0
    assert gtou(point, Interval(16, 16)) == 0.0
    assert iou(point, Interval(16, 16)) == 0.0


def test_pairs_are_accepted_and_empty_ground_truth_is_rejected() -> None:
    assert gtou([(10, 20)], (15, 30)) == pytest.approx(0.5)
    assert iou([[10, 20]], [10, 20]) == 1.0
    with pytest.raises(ConfigError, match="no ground-truth"):
        gtou([], Interval(0, 1))
    with pytest.raises(ConfigError, match="no ground-truth"):
        iou([], None)
    with pytest.raises(ConfigError):
        gtou(Interval(0, 1), Interval(0, 1))  # type: ignore[arg-type]


times = st.floats(min_value=0, max_value=1e4, allow_nan=False, allow_infinity=False)
intervals = st.tuples(times, times).map(lambda p: Interval(*sorted(p)))
gt_lists = st.lists(intervals, min_size=1, max_size=4)


@given(gt_lists, intervals)
def test_scores_lie_in_unit_interval_and_iou_never_exceeds_gtou(
    gt: list[Interval], pred: Interval
) -> None:
    g, i = gtou(gt, pred), iou(gt, pred)
    assert 0.0 <= i <= g <= 1.0


@given(gt_lists, st.data())
def test_prediction_inside_ground_truth_scores_one(gt: list[Interval], data: st.DataObject) -> None:
    host = data.draw(st.sampled_from(gt))
    a = data.draw(st.floats(min_value=host.start, max_value=host.end))
    b = data.draw(st.floats(min_value=host.start, max_value=host.end))
    assert gtou(gt, Interval(*sorted((a, b)))) == 1.0


@given(gt_lists, st.floats(min_value=1e-3, max_value=100), st.floats(min_value=0, max_value=100))
def test_disjoint_prediction_scores_zero(gt: list[Interval], gap: float, length: float) -> None:
    start = max(iv.end for iv in gt) + gap
    pred = Interval(start, start + length)
    assert gtou(gt, pred) == 0.0
    assert iou(gt, pred) == 0.0


@given(intervals, intervals)
def test_iou_is_symmetric_for_single_intervals(a: Interval, b: Interval) -> None:
    assume(a.length > 0 and b.length > 0)
    assert iou([a], b) == pytest.approx(iou([b], a))
