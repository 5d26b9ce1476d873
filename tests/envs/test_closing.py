"""The ``with`` base of servers and remote envs: closes on the way out, errors too."""

import pytest

from video_env._closing import Closing


class Counter(Closing):
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_a_with_block_gives_the_object_and_closes_it_once() -> None:
    counter = Counter()
    with counter as entered:
        assert entered is counter and counter.closed == 0
    assert counter.closed == 1


def test_an_error_in_the_block_still_closes_and_propagates() -> None:
    counter = Counter()
    with pytest.raises(RuntimeError, match="boom"), counter:
        raise RuntimeError("boom")
    assert counter.closed == 1
