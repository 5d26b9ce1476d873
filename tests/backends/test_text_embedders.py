import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from video_env import UnknownNameError
from video_env.backends import LexicalEmbedder, default_text_embedder, resolve_text_embedder
from video_env.backends.text import minilm_available, use_text_embedder


def cos(e: object, a: str, b: str) -> float:
    v = e.embed([a, b])  # type: ignore[attr-defined]
    return float(v[0] @ v[1])


@given(st.lists(st.text(max_size=40), max_size=5))
def test_lexical_rows_are_unit_or_zero(texts: list[str]) -> None:
    v = LexicalEmbedder(dim=64).embed(texts)
    assert v.shape == (len(texts), 64)
    norms = np.linalg.norm(v, axis=1)
    assert np.all((np.abs(norms - 1) < 1e-5) | (norms == 0))


def test_lexical_similarity_follows_word_overlap() -> None:
    e = LexicalEmbedder()
    assert cos(e, "a red umbrella", "What colour is the umbrella?") > 0.3
    assert cos(e, "a red umbrella", "a wall clock at 7:45") < 0.15
    assert cos(e, "the clock", "clocks") > 0.2  # character trigrams link word forms


def test_resolution_of_the_embedder_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIDEO_ENV_TEXT_EMBEDDER", "lexical")
    assert resolve_text_embedder() == "lexical"
    assert default_text_embedder().name == "lexical"
    monkeypatch.delenv("VIDEO_ENV_TEXT_EMBEDDER")
    assert resolve_text_embedder() == "lexical"  # the default, whatever is installed
    with pytest.raises(UnknownNameError, match="lexical, minilm"):
        resolve_text_embedder("word2vec")


@pytest.mark.skipif(not minilm_available(), reason="models extra not installed")
def test_minilm_is_a_real_semantic_model() -> None:
    with use_text_embedder("minilm"):
        assert default_text_embedder().name == "minilm"
    e = default_text_embedder("minilm")
    assert e.name == "minilm"
    v = e.embed(["a crimson umbrella"])
    assert v.shape == (1, 384)
    # Synonyms with no shared words: only a real sentence model links them.
    related = cos(e, "a crimson umbrella", "a red parasol")
    assert related > cos(e, "a crimson umbrella", "a wall clock")
    assert cos(LexicalEmbedder(), "a crimson umbrella", "a red parasol") < 0.1


def test_info_survives_a_bad_embedder_choice(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from video_env.cli import main

    monkeypatch.setenv("VIDEO_ENV_TEXT_EMBEDDER", "word2vec")
    assert main(["info"]) == 0
    assert "text embedder: error: unknown text embedder 'word2vec'" in capsys.readouterr().out
