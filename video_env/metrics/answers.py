"""Multiple-choice answer extraction, text normalisation and accuracy.

:func:`extract_option` reads the option letter that a free-text reply designates. It applies
the rules below in order; the first rule that designates something decides: one option gives
its letter, several distinct options give ``None`` (ambiguous), and no rule matching gives
``None``. Letters outside the question's options (``"E"`` for a four-option question) are
ignored, as if absent.

1. **Bare letter**: the whole reply is one letter with only punctuation around it
   (``"B"``, ``"(b)"``, ``"B."``, ``"[B]"``, ``"**B**"``); either case.
2. **Exact option text**: the normalised reply equals the normalised text of an option.
3. **Answer phrase**: ``"answer is B"``, ``"Answer: b"``, ``"the answer would be (C)"``,
   ``"final answer: D"``. When the reply holds a *final* answer phrase, only those count.
4. **Option phrase**: ``"option B"``, ``"choice (C)"``, ``"letter d"``.
5. **Leading label**: the reply starts with a letter and a delimiter, then text
   (``"B. text"``, ``"B) text"``, ``"(B) text"``, ``"[B] text"``, ``"B: text"``).
6. **Bracketed letter** anywhere: ``"I think (B) is right"``.
7. **Option text inside the reply**: the normalised reply contains the normalised text of
   options as whole words; an option whose text lies inside another matched option's text
   (``"red"`` inside ``"dark red"``) does not count.
8. **Stand-alone capital letter**: ``"B is correct"``, ``"I'd go with C."``.

Letters versus words: a letter counts only as a token of its own (``"answer: Blue"`` and
``"answer is I'm unsure"`` designate nothing). In rules 3-4 a lowercase ``a``/``i`` followed by
a word is the article or pronoun (``"the answer is a dog"`` designates nothing), except right
after *option*/*choice*/*letter* (``"option a is correct"``). In rule 8 only capitals count,
not inside tokens such as ``"T-shirt"`` or ``"U.S."``, and a capital ``A``/``I`` followed by a
word is the article or pronoun (``"A man is walking"``, ``"I think"``), except ``A`` before a
copula or a conjunction (``"A is correct"``, ``"A or B"``).

Limitation: when the option texts are themselves single letters, a bare letter is read as the
option label, not as the option text.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence

from video_env.errors import ConfigError
from video_env.types import OPTION_LETTERS, VideoQA

__all__ = ["accuracy", "extract_option", "mcq_correct", "normalize_text"]

_ARTICLES = frozenset({"a", "an", "the"})
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        (
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        )
    )
}
# Punctuation (and "_") becomes a space, except "." and ":" between digits ("3.5", "10:30").
_PUNCT_RE = re.compile(r"(?!(?<=\d)[.:](?=\d))(?:[^\w\s]|_)")
_THOUSANDS_RE = re.compile(r"(?<=\d),(?=\d{3}\b)")
_APOSTROPHE_RE = re.compile(r"['’`]")

_OPEN = r"(?P<open>[(\[*\"'`\s]*)"
_LETTER = r"(?P<letter>[A-Za-z])"
_WHOLE_LETTER_RE = re.compile(r"^\W*(?P<letter>[A-Za-z])\W*$")
_ANSWER_RE = re.compile(
    r"\b(?P<final>final\s+)?answer\b\s*"
    r"(?P<connector>(?:(?:is|would\s+be|should\s+be|will\s+be|must\s+be|=)\s*|[:\-–]\s*)+)"
    r"(?:(?:option|choice|letter)\b\s*)?" + _OPEN + _LETTER,
    re.IGNORECASE,
)
_OPTION_RE = re.compile(
    r"\b(?:option|choice|letter)\b\s*(?P<connector>(?:is\s*|[:\-–]\s*)*)" + _OPEN + _LETTER,
    re.IGNORECASE,
)
_LEADING_RE = re.compile(
    r"^[\s*\"'`]*(?:[(\[]\s*(?P<b>[A-Za-z])\s*[)\]]|(?P<letter>[A-Za-z])(?:[)\]]|[.:](?=\s|$)))"
)
_BRACKETED_RE = re.compile(r"(?<!\w)[(\[]\s*(?P<letter>[A-Za-z])\s*[)\]]")
_CAPITAL_RE = re.compile(r"(?<![\w\-/&.'’])(?P<letter>[A-Z])(?=$|[\s)\]*\"`,;:!?]|\.(?:\s|$))")
_FOLLOWED_BY_WORD_RE = re.compile(r"[\s*\"'`]*[)\]]?\s+(?P<word>\w+)")
# Words after which a capital "A" is an option letter rather than the article.
_AFTER_LETTER_A = frozenset(
    {"is", "was", "seems", "appears", "looks", "would", "should", "must", "or", "and", "nor", "vs"}
)


def normalize_text(text: str, *, numbers: bool = True) -> str:
    """Normalise a short answer for comparison.

    Applies Unicode NFKC and case folding, deletes apostrophes (``"don't"`` → ``"dont"``),
    turns other punctuation into spaces (keeping ``.``/``:`` between digits, as in ``"3.5"``
    and ``"10:30"``, and deleting thousands separators, ``"1,000"`` → ``"1000"``), drops the
    articles *a*, *an*, *the*, optionally maps the number words *zero* … *twenty* to digits,
    and collapses whitespace.

    Args:
        text: The text to normalise.
        numbers: Whether to map the number words 0-20 to digits.

    Returns:
        The normalised text, possibly empty.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = _THOUSANDS_RE.sub("", _APOSTROPHE_RE.sub("", folded))
    tokens = [t for t in _PUNCT_RE.sub(" ", folded).split() if t not in _ARTICLES]
    if numbers:
        tokens = [_NUMBER_WORDS.get(t, t) for t in tokens]
    return " ".join(tokens)


def _valid_letters(options: Sequence[str]) -> str:
    if isinstance(options, str) or not 1 <= len(options) <= len(OPTION_LETTERS):
        raise ConfigError(f"options must be a sequence of 1-26 option texts, got {options!r}")
    if not all(isinstance(o, str) for o in options):
        raise ConfigError("option texts must be strings")
    return OPTION_LETTERS[: len(options)]


def _decide(letters: Iterable[str], valid: str) -> tuple[bool, str | None]:
    """Return (decided, letter): decided when at least one valid letter was designated."""
    found = {letter.upper() for letter in letters} & set(valid)
    if not found:
        return False, None
    return True, (found.pop() if len(found) == 1 else None)


def _article_like(text: str, match: re.Match[str]) -> bool:
    """Whether a lowercase ``a``/``i`` letter match is followed by a word."""
    letter = match.group("letter")
    if letter not in "ai" or "(" in match.group("open") or "[" in match.group("open"):
        return False
    return _FOLLOWED_BY_WORD_RE.match(text, match.end()) is not None


def _phrase_letters(text: str, pattern: re.Pattern[str], *, final_only: bool) -> list[str]:
    letters: list[str] = []
    for match in pattern.finditer(text):
        if final_only and not match.group("final"):
            continue
        end = match.end("letter")
        if end < len(text) and (text[end].isalnum() or text[end] in "'’"):
            continue  # "answer: Blue", "answer is I'm not sure"
        connector = match.group("connector").strip()
        if (connector or pattern is _ANSWER_RE) and _article_like(text, match):
            continue
        letters.append(match.group("letter"))
    return letters


def _answer_phrase_letters(text: str) -> list[str]:
    finals = _phrase_letters(text, _ANSWER_RE, final_only=True)
    return finals or _phrase_letters(text, _ANSWER_RE, final_only=False)


def _leading_letters(text: str) -> list[str]:
    match = _LEADING_RE.match(text)
    if match is None:
        return []
    return [match.group("b") or match.group("letter")]


def _is_article_or_pronoun(letter: str, following: re.Match[str] | None) -> bool:
    if letter not in "AI" or following is None:
        return False
    return letter == "I" or following.group("word").lower() not in _AFTER_LETTER_A


def _capital_letters(text: str) -> list[str]:
    letters: list[str] = []
    for match in _CAPITAL_RE.finditer(text):
        letter = match.group("letter")
        following = re.match(r"\s+(?P<word>[\w'’]+)", text[match.end() :])
        if _is_article_or_pronoun(letter, following):
            continue
        letters.append(letter)
    return letters


def _text_matches(text: str, options: Sequence[str], *, exact: bool) -> list[str]:
    reply = normalize_text(text)
    normalised = [normalize_text(o) for o in options]
    if exact:
        return [OPTION_LETTERS[i] for i, o in enumerate(normalised) if o and o == reply]
    padded = f" {reply} "
    hits = [i for i, o in enumerate(normalised) if o and f" {o} " in padded]
    kept = [
        i
        for i in hits
        if not any(j != i and f" {normalised[i]} " in f" {normalised[j]} " for j in hits)
    ]
    return [OPTION_LETTERS[i] for i in kept]


def extract_option(text: str, options: Sequence[str]) -> str | None:
    """Read the option letter that a free-text reply designates.

    See the module docstring for the rules, applied in order; the first rule that designates
    a valid option decides.

    Args:
        text: The model's reply.
        options: The option texts of the question, in letter order.

    Returns:
        The upper-case option letter, or ``None`` when the reply designates no option or
        several different ones.

    Raises:
        ConfigError: If ``options`` is not a sequence of 1-26 strings.
    """
    valid = _valid_letters(options)
    text = text.strip()
    if not text:
        return None
    whole = _WHOLE_LETTER_RE.match(text)
    if whole is not None:
        return _decide([whole.group("letter")], valid)[1]
    rules = (
        lambda: _text_matches(text, options, exact=True),
        lambda: _answer_phrase_letters(text),
        lambda: _phrase_letters(text, _OPTION_RE, final_only=False),
        lambda: _leading_letters(text),
        lambda: [m.group("letter") for m in _BRACKETED_RE.finditer(text)],
        lambda: _text_matches(text, options, exact=False),
        lambda: _capital_letters(text),
    )
    for rule in rules:
        decided, letter = _decide(rule(), valid)
        if decided:
            return letter
    return None


def _mcq_key(sample: VideoQA | Sequence[str], answer: str | None) -> tuple[Sequence[str], str]:
    if isinstance(sample, VideoQA):
        if sample.options is None:
            raise ConfigError(f"sample {sample.id} is not a multiple-choice question")
        if sample.answer is None:
            raise ConfigError(f"sample {sample.id} has no known answer; exclude it from accuracy")
        return sample.options, sample.answer
    valid = _valid_letters(sample)
    if answer is None or answer.strip().upper() not in set(valid):
        raise ConfigError(f"answer must be one of the option letters {valid}, got {answer!r}")
    return sample, answer.strip().upper()


def mcq_correct(reply: str, sample: VideoQA | Sequence[str], answer: str | None = None) -> bool:
    """Tell whether a reply designates the correct option of a multiple-choice question.

    Args:
        reply: The model's free-text reply.
        sample: A multiple-choice :class:`~video_env.types.VideoQA`, or the option texts.
        answer: The correct letter; required (and only used) when ``sample`` is option texts.

    Returns:
        Whether :func:`extract_option` reads the correct letter; an ambiguous or
        unreadable reply is wrong.

    Raises:
        ConfigError: If the sample is not an MCQ, its answer is unknown, or ``answer`` is
            not one of the option letters.
    """
    options, correct = _mcq_key(sample, answer)
    return extract_option(reply, options) == correct


def accuracy(correct: Iterable[bool | None]) -> float:
    """Fraction of correct answers, leaving out ungradable ones.

    Args:
        correct: One flag per sample; ``None`` marks a sample whose answer is unknown, which
            is excluded (neither right nor wrong).

    Returns:
        The mean of the non-``None`` flags, or ``nan`` when there are none.
    """
    flags = [bool(c) for c in correct if c is not None]
    return sum(flags) / len(flags) if flags else math.nan
