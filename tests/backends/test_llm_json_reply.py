"""JSON out of model replies: a corpus of malformed replies, and arbitrary text."""

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("json_repair")

from video_env.backends.llm import ReplyFormatError, parse_json_object, parse_json_reply
from video_env.errors import BackendError

CORPUS_PATH = Path(__file__).parents[1] / "fixtures" / "llm_replies.jsonl"
CORPUS: list[dict[str, Any]] = [
    json.loads(line) for line in CORPUS_PATH.read_text(encoding="utf-8").splitlines() if line
]


def test_corpus_is_large_and_varied() -> None:
    assert len(CORPUS) >= 40
    assert len({r["id"] for r in CORPUS}) == len(CORPUS)
    kinds = {r["kind"] for r in CORPUS}
    assert {"prose", "fence", "truncated", "semantic", "empty", "refusal", "syntax"} <= kinds
    assert sum("error" in r for r in CORPUS) >= 10


@pytest.mark.parametrize("record", CORPUS, ids=[r["id"] for r in CORPUS])
def test_corpus_reply(record: dict[str, Any]) -> None:
    if "error" in record:
        with pytest.raises(ReplyFormatError):
            parse_json_reply(record["reply"])
    else:
        assert parse_json_reply(record["reply"]) == record["value"]


@pytest.mark.parametrize("record", CORPUS, ids=[r["id"] for r in CORPUS])
def test_corpus_reply_as_object(record: dict[str, Any]) -> None:
    value = record.get("value")
    if isinstance(value, dict):
        assert parse_json_object(record["reply"]) == value
    elif value is None:
        with pytest.raises(ReplyFormatError):
            parse_json_object(record["reply"])
    else:  # an array: the first object inside it, if any
        try:
            got = parse_json_object(record["reply"])
        except ReplyFormatError:
            return
        assert isinstance(got, dict) and got in value


def test_error_is_a_backend_error_and_keeps_the_reply() -> None:
    reply = "I cannot answer questions about this video. " * 5
    with pytest.raises(BackendError, match="no JSON") as info:
        parse_json_reply(reply)
    assert isinstance(info.value, ReplyFormatError)
    assert info.value.reply == reply
    assert len(str(info.value)) < 150  # a preview, not the whole reply


def test_non_string_is_a_programming_error() -> None:
    with pytest.raises(TypeError):
        parse_json_reply(None)  # type: ignore[arg-type]


@given(st.text(max_size=200))
def test_any_text_gives_json_or_reply_format_error(text: str) -> None:
    try:
        value = parse_json_reply(text)
    except ReplyFormatError:
        return
    assert isinstance(value, (dict, list))


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=10),
        st.one_of(st.integers(), st.text(max_size=20), st.booleans(), st.none()),
        min_size=1,
        max_size=5,
    ),
    st.text(alphabet=st.characters(blacklist_characters="{}[]`"), max_size=40),
)
def test_valid_json_inside_prose_round_trips(obj: dict[str, Any], prose: str) -> None:
    reply = f"{prose}\n{json.dumps(obj)}\n{prose}"
    assert parse_json_object(reply) == obj
