import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from video_env import Interval, SampleError, VideoQA, merge_intervals

times = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)


@given(times, times)
def test_interval_accepts_ordered_pairs_and_rejects_reversed(a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    iv = Interval(lo, hi)
    assert iv.length == hi - lo >= 0
    assert iv.contains(iv.center)
    if lo < hi:
        with pytest.raises(SampleError, match="after its end"):
            Interval(hi, lo)


@given(times, times, times, times)
def test_intersection_is_symmetric_and_inside_both(a: float, b: float, c: float, d: float) -> None:
    x, y = Interval(*sorted((a, b))), Interval(*sorted((c, d)))
    inter = x.intersection(y)
    assert inter == y.intersection(x)
    if inter is not None:
        assert x.contains(inter.start) and y.contains(inter.end)
        assert inter.length <= min(x.length, y.length)
    else:
        assert x.end < y.start or y.end < x.start


@pytest.mark.parametrize("bad", [(-1, 2), (0, math.inf), (math.nan, 1), (True, 2), ("0", "1")])
def test_interval_rejects_bad_bounds(bad: tuple[object, object]) -> None:
    with pytest.raises(SampleError):
        Interval(*bad)  # type: ignore[arg-type]


@given(st.lists(st.tuples(times, times), max_size=20))
def test_merge_intervals_gives_sorted_disjoint_cover(pairs: list[tuple[float, float]]) -> None:
    ivs = [Interval(*sorted(p)) for p in pairs]
    merged = merge_intervals(ivs)
    for a, b in itertools.pairwise(merged):
        assert a.end < b.start
    for iv in ivs:
        assert any(m.start <= iv.start and iv.end <= m.end for m in merged)


def make(**kw: object) -> VideoQA:
    base: dict[str, object] = {
        "id": "q1",
        "video": "v.mp4",
        "question": "What colour is the car?",
        "answer": "B",
        "duration": 120.0,
        "options": ("red", "blue", "green", "white"),
        "gt_intervals": [(10, 20), [30.5, 31]],
    }
    base.update(kw)
    return VideoQA(**base)  # type: ignore[arg-type]


def test_videoqa_mcq_properties() -> None:
    qa = make()
    assert qa.is_mcq and qa.has_answer
    assert qa.answer_index == 1 and qa.answer_text == "blue"
    assert qa.option_letters == ("A", "B", "C", "D")
    assert qa.gt_intervals == (Interval(10, 20), Interval(30.5, 31))
    assert qa.video_path == "v.mp4"


def test_videoqa_open_and_unknown_answer() -> None:
    open_q = make(options=None, answer="a blue car")
    assert not open_q.is_mcq and open_q.answer_text == "a blue car"
    unknown = make(answer=None)
    assert not unknown.has_answer and unknown.answer_index is None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"question": "  "}, "question is empty"),
        ({"id": ""}, "non-empty"),
        ({"answer": "E"}, "option letter A-D"),
        ({"answer": "blue"}, "option letter"),
        ({"options": ("only one",)}, "2-26 options"),
        ({"options": ("a", "")}, "non-empty strings"),
        ({"gt_intervals": [(100, 130)]}, "outside the video"),
        ({"duration": 0}, "duration must be > 0"),
        ({"gt_intervals": [(5, 1)]}, "after its end"),
    ],
)
def test_videoqa_rejects_inconsistent_samples(changes: dict[str, object], message: str) -> None:
    with pytest.raises(SampleError, match=message):
        make(**changes)


def test_videoqa_round_trips_through_dict() -> None:
    qa = make(category="visual", source="synth", meta={"level": 2})
    assert VideoQA.from_dict(qa.to_dict()) == qa


def test_library_errors_survive_pickling() -> None:
    import pickle

    from video_env.backends.llm.failures import LLMCallError
    from video_env.errors import (
        BackendNotInstalled,
        DatasetError,
        UnknownNameError,
        VideoDecodeError,
    )

    for error in (
        BackendNotInstalled("torch", "models", "x"),
        UnknownNameError("suite", "s", ["a", "b"]),
        VideoDecodeError("/v.mp4", "corrupt"),
        DatasetError("f.json", "bad", 3),
        LLMCallError("down", 503, 5, True),
        SampleError("plain"),
    ):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error)
        assert str(copy) == str(error)
        assert copy.__dict__.keys() >= {k for k in error.__dict__ if k != "_init_args"}


def test_interval_accepts_numpy_scalars_from_observations() -> None:
    import numpy as np

    window = np.asarray([1.5, 3.0], dtype=np.float32)
    interval = Interval(window[0], window[1])
    assert interval == Interval(1.5, 3.0) and type(interval.start) is float
    with pytest.raises(SampleError):
        Interval(np.bool_(True), 2.0)  # type: ignore[arg-type]


def test_an_option_with_a_newline_stays_one_option_in_every_prompt() -> None:
    from policies.observations import option_letters
    from policies.prompts import options_block
    from video_env.backends.vlm_prompts import question_prompt
    from video_env.envs.spaces import format_options

    options = ["red\nC. green", "blue"]  # a hostile option text forging a third option
    for text in (format_options(options), options_block(options), question_prompt("Q?", options)):
        assert "C. green" not in text.splitlines()
        assert "A. red C. green" in text
    assert option_letters(format_options(options)) == ["A", "B"]
