"""Confidence rules (FALCONEye's and the alternatives) and the VLM prompts."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from video_env.backends.confidence import (
    TokenProb,
    check_rule,
    confidence,
    falconeye_confidence,
    option_letters,
    parse_verbal_confidence,
)
from video_env.backends.vlm_prompts import caption_prompt, question_prompt
from video_env.errors import ConfigError

END = "<|im_end|>"


def toks(*pairs: tuple[str, float]) -> list[TokenProb]:
    return [TokenProb(text, p, p) for text, p in pairs]


def test_open_answer_is_the_rounded_geometric_mean_including_the_end_token() -> None:
    tokens = toks(("Red", 0.9), (" car", 0.6), (END, 0.99))
    assert falconeye_confidence(tokens) == round((0.9 * 0.6 * 0.99) ** (1 / 3), 3)


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        (toks(("B", 0.93), (END, 0.99)), 0.93),
        (toks(("B", 0.93), (".", 0.5), (END, 0.99)), 0.93),
        (toks(("The", 0.9), (" answer", 0.9), (" is", 0.9), (" B", 0.9), (END, 0.9)), 0.0),
        # " C" (with its space) is not a letter token: the reference counts only "B"
        (toks(("B", 0.9), (" or", 0.5), (" C", 0.9)), 0.9),
        (toks(("B", 0.9), ("C", 0.9), (END, 0.9)), 0.0),  # two letters
        (toks(("E", 0.9), (END, 0.9)), 0.0),  # not one of the 4 options
        (toks(("B", 0.9), *[(".", 0.9)] * 4, (END, 0.9)), 0.0),  # 6 tokens > 5
        (toks(("B", 0.8), *[(".", 0.9)] * 3, (END, 0.9)), 0.8),  # exactly 5 tokens
        ([], 0.0),
    ],
)
def test_mcq_letter_rule(tokens: list[TokenProb], expected: float) -> None:
    assert falconeye_confidence(tokens, option_letters(["a", "b", "c", "d"])) == expected


def test_alternative_rules() -> None:
    tokens = [TokenProb("A", 0.8, 0.8), TokenProb("b", 0.5, 0.4)]
    assert confidence("sequence", tokens) == pytest.approx(0.8 * 0.4)
    assert confidence("mean", tokens) == pytest.approx(0.65)
    assert confidence("verbal", tokens, stated=0.7) == 0.7
    assert confidence("verbal", tokens) == 0.0
    with pytest.raises(ConfigError, match="known: falconeye"):
        check_rule("entropy")


@given(st.lists(st.floats(1e-6, 1.0), min_size=1, max_size=40))
def test_open_confidence_lies_between_min_and_max(probs: list[float]) -> None:
    c = falconeye_confidence([TokenProb("w", p, p) for p in probs])
    assert round(min(probs), 3) - 1e-3 <= c <= round(max(probs), 3) + 1e-3
    assert c == round(math.prod(probs) ** (1 / len(probs)), 3)


def test_parse_verbal_confidence() -> None:
    assert parse_verbal_confidence("A red car\nConfidence: 85") == ("A red car", 0.85)
    assert parse_verbal_confidence("B\nconfidence = 0.4") == ("B", 0.4)
    assert parse_verbal_confidence("B") == ("B", None)


def test_prompts_are_falcon_bench_s() -> None:
    assert question_prompt("What is it?", ["a cat", "a dog"]) == (
        "Answer the following question based on the provided frames.\n\nWhat is it?\n"
        "A. a cat\nB. a dog\nAnswer with the option's letter from the given choices directly"
    )
    assert question_prompt("What is it?") == (
        "Answer the following question based on the provided frames.\n\nWhat is it?\n"
    )
    assert caption_prompt().startswith("Provide a short description of this clip")
    assert "15 words maximum" in caption_prompt()
