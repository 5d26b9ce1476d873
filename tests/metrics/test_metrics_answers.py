import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from video_env import ConfigError, VideoQA
from video_env.metrics import accuracy, extract_option, mcq_correct, normalize_text
from video_env.types import OPTION_LETTERS

OPTIONS = ("red car", "blue car", "green truck", "dark red car")


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("B", "B"),
        ("(B)", "B"),
        ("B.", "B"),
        ("[B]", "B"),
        ("**C**", "C"),
        ("b", "B"),
        (" d ", "D"),
        ("B. blue car", "B"),
        ("B) blue car", "B"),
        ("b) blue", "B"),
        ("(c) green", "C"),
        ("[D] the dark one", "D"),
        ("C: green truck", "C"),
        ("a. red car", "A"),
        ("The answer is B", "B"),
        ("The answer is B because the car is blue.", "B"),
        ("The answer is A because the car is red.", "A"),
        ("Answer: b", "B"),
        ("answer: a", "A"),
        ("Answer - C", "C"),
        ("Answer: D.", "D"),
        ("the answer would be (d)", "D"),
        ("The correct answer is option C.", "C"),
        ("Final Answer: B", "B"),
        ("The answer is A. No wait, the final answer is C.", "C"),
        ("Choice D", "D"),
        ("The correct option is B.", "B"),
        ("option a is correct", "A"),
        ("I think (B) is right", "B"),
        ("blue car", "B"),
        ("Blue Car!", "B"),
        ("I think it is the green truck", "C"),
        ("a red car", "A"),
        ("a dark red car", "D"),
        ("The answer is blue car", "B"),
        ("A is correct", "A"),
        ("I am sure it is B", "B"),
        ("I'd go with C.", "C"),
    ],
)
def test_extract_option_reads_the_designated_letter(reply: str, letter: str) -> None:
    assert extract_option(reply, OPTIONS) == letter


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   ",
        "A man is walking",
        "I think so",
        "I don't know",
        "The answer is a dog",
        "answer is i'm unsure",
        "none of these",
        "The car is blue.",
        "It's a T-shirt",
        "The U.S. flag",
        "E",
        "The answer is E",
        "Either (A) or (B)",
        "B is correct, not A",
        "The answer is A or the answer is B",
        "red car or blue car",
        "Is the answer A?  Is it B?",
    ],
)
def test_extract_option_returns_none_when_nothing_or_several_are_designated(reply: str) -> None:
    assert extract_option(reply, OPTIONS) is None


def test_option_text_shadowed_by_a_longer_option_does_not_count() -> None:
    assert extract_option("It was the dark red car.", OPTIONS) == "D"
    assert extract_option("It was the red car.", OPTIONS) == "A"


def test_exact_option_text_wins_over_letters_inside_it() -> None:
    options = ("Building A", "Building C", "Building D")
    assert extract_option("Building C", options) == "B"
    assert extract_option("building c.", options) == "B"


def test_letters_outside_the_options_are_ignored() -> None:
    assert extract_option("D", ("yes", "no")) is None
    assert extract_option("(D) or (B)", ("yes", "no")) == "B"


@pytest.mark.parametrize("bad", [(), "abc", tuple(f"o{i}" for i in range(27)), (1, 2)])
def test_extract_option_rejects_bad_options(bad: object) -> None:
    with pytest.raises(ConfigError):
        extract_option("A", bad)  # type: ignore[arg-type]


@given(st.integers(min_value=2, max_value=26), st.data())
def test_bracketed_letter_is_read_for_every_valid_letter(n: int, data: st.DataObject) -> None:
    options = tuple(f"option text {i}" for i in range(n))
    letter = data.draw(st.sampled_from(OPTION_LETTERS[:n]))
    assert extract_option(f"({letter})", options) == letter
    assert extract_option(f"({letter.lower()})", options) == letter
    assert extract_option(f"The answer is ({letter}).", options) == letter
    assert extract_option(f"{letter}. {options[OPTION_LETTERS.index(letter)]}", options) == letter


@given(st.text(max_size=80))
def test_extract_option_never_crashes_and_returns_a_valid_letter(text: str) -> None:
    result = extract_option(text, OPTIONS)
    assert result is None or result in "ABCD"


def _mcq(answer: str | None) -> VideoQA:
    return VideoQA(id="q1", video="v.mp4", question="Which car?", answer=answer, options=OPTIONS)


def test_mcq_correct_with_sample_and_with_options() -> None:
    assert mcq_correct("(B)", _mcq("B"))
    assert not mcq_correct("(A)", _mcq("B"))
    assert not mcq_correct("A or B", _mcq("B"))
    assert mcq_correct("The answer is C", OPTIONS, "C")
    assert mcq_correct("green truck", OPTIONS, "c")
    assert not mcq_correct("blue car", OPTIONS, "C")


def test_mcq_correct_rejects_unusable_keys() -> None:
    with pytest.raises(ConfigError, match="no known answer"):
        mcq_correct("B", _mcq(None))
    with pytest.raises(ConfigError, match="not a multiple-choice"):
        mcq_correct("B", VideoQA(id="o", video="v.mp4", question="What?", answer="red"))
    with pytest.raises(ConfigError, match="option letters"):
        mcq_correct("B", OPTIONS, None)
    with pytest.raises(ConfigError, match="option letters"):
        mcq_correct("B", OPTIONS, "E")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Red Car.", "red car"),
        ("  an   apple!! ", "apple"),
        ("Three men", "3 men"),
        ("twenty-one", "20 1"),
        ("don't", "dont"),
        ("3.5 km at 10:30", "3.5 km at 10:30"),
        ("1,000 people", "1000 people"),
        ("red, green", "red green"),
        ("snake_case", "snake case"),
        ("ＡＢＣ", "abc"),
        ("the", ""),
    ],
)
def test_normalize_text(text: str, expected: str) -> None:
    assert normalize_text(text) == expected


def test_normalize_text_can_keep_number_words() -> None:
    assert normalize_text("Three men", numbers=False) == "three men"


def test_accuracy_excludes_unknown_answers() -> None:
    assert accuracy([True, False, None, True]) == pytest.approx(2 / 3)
    assert accuracy([False, False]) == 0.0
    assert math.isnan(accuracy([None, None]))
    assert math.isnan(accuracy([]))
