import math

import pytest

from video_env import ConfigError
from video_env.metrics import Cost, mean_costs


def test_costs_add_field_by_field() -> None:
    a = Cost(frames=10, vlm_calls=1, prompt_tokens=100, wall_s=1.5, money_usd=0.01)
    b = Cost(frames=5, llm_calls=2, completion_tokens=7, visual_tokens=64, wall_s=0.5)
    total = a + b
    assert total == Cost(
        frames=15,
        vlm_calls=1,
        llm_calls=2,
        prompt_tokens=100,
        completion_tokens=7,
        visual_tokens=64,
        wall_s=2.0,
        money_usd=0.01,
    )
    assert total.total_tokens == 107
    assert sum([a, b], Cost()) == total
    assert sum([a, b]) == total
    assert sum([], Cost()) == Cost()


def test_adding_something_else_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        _ = Cost() + 1  # type: ignore[operator]
    with pytest.raises(TypeError):
        _ = 2 + Cost()


def test_to_dict_and_from_dict_round_trip() -> None:
    cost = Cost(frames=3, clip_calls=2, caption_calls=1, wall_s=0.25)
    record = cost.to_dict()
    assert record["frames"] == 3 and record["clip_calls"] == 2 and record["wall_s"] == 0.25
    assert set(record) == {
        "frames",
        "vlm_calls",
        "caption_calls",
        "clip_calls",
        "llm_calls",
        "prompt_tokens",
        "completion_tokens",
        "visual_tokens",
        "wall_s",
        "money_usd",
    }
    assert Cost.from_dict(record) == cost
    assert Cost.from_dict({"frames": 2}) == Cost(frames=2)
    with pytest.raises(ConfigError, match="unknown cost fields: tokens"):
        Cost.from_dict({"tokens": 2})


def test_mean_costs_hand_computed() -> None:
    means = mean_costs([Cost(frames=10, wall_s=1.0), Cost(frames=5, vlm_calls=3, wall_s=2.0)])
    assert means["frames"] == 7.5
    assert means["vlm_calls"] == 1.5
    assert means["wall_s"] == 1.5
    assert means["llm_calls"] == 0.0
    assert all(isinstance(v, float) for v in means.values())
    with pytest.raises(ConfigError, match="at least one"):
        mean_costs([])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"frames": -1},
        {"frames": 1.5},
        {"vlm_calls": True},
        {"wall_s": -0.1},
        {"money_usd": math.inf},
    ],
)
def test_invalid_costs_raise(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        Cost(**kwargs)  # type: ignore[arg-type]


def test_float_fields_accept_ints() -> None:
    assert Cost(wall_s=2).wall_s == 2.0 and isinstance(Cost(wall_s=2).wall_s, float)
