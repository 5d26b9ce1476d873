"""The pixel VLM's stage-2 settings for Eq. 1 and captions: soft guesses, aligned carrier words."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

import torch

from experiments.pixel_models.vlm_data import CARRIER_CLASSES, MCQ_OPTIONS
from experiments.pixel_models.vlm_train import (
    VisionHeads,
    align_carrier_words,
    align_fact_words,
    crop_batch,
    reply_loss,
    window_batch,
)
from video_env.pixel.splits import split_videos
from video_env.types import OPTION_LETTERS


def _reply_logits(first: list[float]) -> tuple[Any, Any]:
    """Logits over a 6-token vocabulary for a 3-token row whose reply is its last token.

    The reply's label is token 0; ``first`` are the logits of tokens 0-3 (the "letters")
    at the position that predicts it.
    """
    logits = torch.zeros(1, 3, 6)
    logits[0, 1, :4] = torch.tensor(first)
    labels = torch.tensor([[-100, -100, 0]])
    return logits, labels


def test_a_guessed_letter_is_taught_the_uniform_distribution_over_the_letters() -> None:
    letters = {0: [0, 1, 2, 3]}
    peaked, labels = _reply_logits([4.0, 0.0, 0.0, 0.0])
    flat, _ = _reply_logits([2.0, 2.0, 2.0, 2.0])
    # as a plain label, putting the mass on the sampled letter is best ...
    assert reply_loss(torch, peaked, labels) < reply_loss(torch, flat, labels)
    # ... as a guess, spreading it over the letters is
    assert reply_loss(torch, flat, labels, letters) < reply_loss(torch, peaked, labels, letters)
    # the guess's loss is the cross-entropy against the uniform over the letters
    log_p = torch.log_softmax(flat[0, 1], -1)[:4]
    assert reply_loss(torch, flat, labels, letters).item() == pytest.approx(-log_p.mean().item())


def test_a_guess_changes_only_its_own_row() -> None:
    a, labels = _reply_logits([4.0, 0.0, 0.0, 0.0])
    b, _ = _reply_logits([0.0, 3.0, 0.0, 0.0])
    logits, both = torch.cat([a, b]), torch.cat([labels, labels])
    plain = reply_loss(torch, logits, both)
    guessed = reply_loss(torch, logits, both, {1: [0, 1, 2, 3]})
    row_a = reply_loss(torch, a, labels)
    assert guessed.item() * 2 - row_a.item() == pytest.approx(
        reply_loss(torch, b, labels, {0: [0, 1, 2, 3]}).item()
    )
    assert guessed != plain


def test_batches_mark_exactly_the_mcqs_asked_without_their_evidence(pixel_vlm_setup) -> None:  # type: ignore[no-untyped-def]
    _, _, bank = pixel_vlm_setup
    rng = np.random.default_rng(3)
    crops = crop_batch(bank, rng, 40, open_share=0.3)
    with_evidence = {row.row for row in crops.evidence}
    for i, example in enumerate(crops.examples):
        is_mcq = example.reply in OPTION_LETTERS
        assert (i in crops.guesses) == (is_mcq and i not in with_evidence)
    assert set(crops.guesses.values()) == {MCQ_OPTIONS}
    assert 0 < len(crops.guesses) < 20
    windows = window_batch(bank, rng, 12)
    mcq_rows = range(0, len(windows.examples), 3)
    evidence_rows = {row.row for row in windows.evidence}
    assert set(windows.guesses) == {r for r in mcq_rows if r not in evidence_rows}
    assert windows.guesses, "some windows ask about a needle they do not show"


def test_carrier_nouns_start_at_the_carrier_head_and_facts_keep_theirs(pixel_vlm_setup) -> None:  # type: ignore[no-untyped-def]
    from experiments.pixel_models.vlm_checkpoint import new_model

    _, processor, _ = pixel_vlm_setup
    model = new_model(processor.tokenizer, 1)
    heads = VisionHeads(torch, model.config.vision_config.out_hidden_size)
    assert align_carrier_words(model, processor, heads) >= 20
    assert align_fact_words(model, processor, heads) > 0
    embed = model.get_input_embeddings().weight.detach()
    out = model.get_output_embeddings().weight.detach()

    def row(word: str) -> Any:
        (token,) = processor.tokenizer(f" {word}", add_special_tokens=False)["input_ids"]
        return embed[token], out[token]

    umbrella = heads.carrier.weight.detach()[CARRIER_CLASSES.index("the umbrella")]
    e, o = row("umbrella")
    assert torch.allclose(e, o)
    assert torch.nn.functional.cosine_similarity(e, umbrella, 0) > 0.999
    clocks = [i for i, name in enumerate(CARRIER_CLASSES) if name.endswith(" clock")]
    shared = heads.carrier.weight.detach()[clocks].mean(0)
    assert len(clocks) > 1
    assert torch.nn.functional.cosine_similarity(row("clock")[0], shared, 0) > 0.999


def test_needle_footprints_grow_with_the_fed_size() -> None:
    from experiments.pixel_models.pixel_vlm_eval import needle_footprints
    from video_env.video.base import Size

    videos = split_videos("test", 2)
    small = needle_footprints(videos, Size(504, 280))
    large = needle_footprints(videos, Size(1008, 560))
    assert small["needles"] == large["needles"] > 0
    assert large["quartiles"][1] == pytest.approx(4 * small["quartiles"][1], rel=0.15)
    assert small["at_most_1"] >= large["at_most_1"]
