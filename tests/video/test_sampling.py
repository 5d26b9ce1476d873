import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from video_env import ConfigError, Interval, Resize, Size
from video_env.video import frame_size, qwen_visual_tokens, uniform_times


def test_uniform_times_are_bin_centres() -> None:
    np.testing.assert_allclose(uniform_times(Interval(0, 10), 5), [1, 3, 5, 7, 9])
    np.testing.assert_allclose(uniform_times(Interval(20, 21), 2), [20.25, 20.75])
    assert uniform_times(Interval(0, 10), 0).shape == (0,)
    with pytest.raises(ConfigError):
        uniform_times(Interval(0, 1), -1)


@given(
    st.floats(0, 1e4, allow_nan=False),
    st.floats(0.001, 1e4, allow_nan=False),
    st.integers(1, 500),
)
def test_uniform_times_stay_inside_and_increase(start: float, length: float, n: int) -> None:
    window = Interval(start, start + length)
    t = uniform_times(window, n)
    assert len(t) == n
    assert np.all(t >= window.start) and np.all(t <= window.end)
    assert np.all(np.diff(t) >= 0)


def test_frame_size_rules() -> None:
    native = Size(1920, 1080)
    assert frame_size(native, None) == native
    assert frame_size(native, 448) == Size(448, 252)
    assert frame_size(native, (1204, 672)) == Size(1195, 672)
    assert frame_size(native, Resize.exact(316, 316)) == Size(316, 316)


@given(st.integers(16, 4000), st.integers(16, 4000), st.integers(56 * 56, 2000 * 2000))
@example(width=37, height=85, budget=56 * 56)  # rounds below the minimum, upscaled past it
def test_max_pixels_rule(width: int, height: int, budget: int) -> None:
    assume(max(width, height) <= 4 * min(width, height))  # ordinary aspect ratios
    out = Resize.max_pixels(budget).target(Size(width, height))
    assert out.width % 28 == 0 and out.height % 28 == 0
    rounded = max(28, round(width / 28) * 28) * max(28, round(height / 28) * 28)
    if rounded >= 56 * 56:  # no upscaling: the budget holds
        assert out.pixels <= budget
    else:  # upscaled to the minimum, sides rounded up (Qwen's rule: may pass the budget)
        assert out.pixels >= 56 * 56
    assert 0.5 < (out.width / out.height) / (width / height) < 2


def test_qwen_visual_tokens() -> None:
    assert qwen_visual_tokens(Size(448, 448), 2) == 16 * 16
    assert qwen_visual_tokens(Size(448, 448), 20) == 10 * 256
    assert qwen_visual_tokens(Size(448, 448), 3) == 2 * 256
