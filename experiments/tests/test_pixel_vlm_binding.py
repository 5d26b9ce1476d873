"""The MCQ binding targets of the pixel VLM's stage 2: where they point, and that they train."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

from experiments.pixel_models.vlm_binding import (
    BindingTarget,
    EvidenceRow,
    binding_targets,
    evidence_mask,
)
from experiments.pixel_models.vlm_data import (
    FrameBank,
    Window,
    caption_carrier,
    fact_index,
    window,
    window_turns,
)
from video_env.types import OPTION_LETTERS


def test_evidence_tokens_of_an_image_and_of_frame_pairs() -> None:
    a = np.array([[0, 5], [5, 5]], np.int16)
    b = np.array([[5, 5], [0, 5]], np.int16)
    assert evidence_mask([a], 0).tolist() == [True, False, False, False]
    # two frames per token: a pair shows the fact when either frame does
    assert evidence_mask([a, b], 0).tolist() == [True, False, True, False]
    # an odd last frame is paired with itself (the processor repeats it)
    first_pair, second_pair = [False, False, True, False], [True, False, False, False]
    assert evidence_mask([b, b, a], 0).tolist() == [*first_pair, *second_pair]


def _window_batch(
    state: tuple[Any, Any, FrameBank], seed: int
) -> tuple[Any, Window, list[tuple[Any, str]], str]:
    from policies.training.turn_encoding import TurnExample, collate_turns

    _, processor, bank = state
    rng = np.random.default_rng(seed)
    while True:
        shown = window(bank, rng, evidence_share=1.0)
        on_window, fact = window_turns(shown, rng)
        if fact is not None:
            break
    batch = collate_turns(processor, [TurnExample(c, r) for c, r in on_window])
    return batch, shown, on_window, fact


def _mcq_batch(state: tuple[Any, Any, FrameBank], seed: int) -> tuple[Any, list[BindingTarget]]:
    model, processor, _ = state
    batch, shown, on_window, fact = _window_batch(state, seed)
    answer = OPTION_LETTERS.index(on_window[0][1])
    rows = [EvidenceRow(0, shown.facts, fact_index(fact), answer)]
    targets = binding_targets(
        processor.tokenizer, model.config, batch["input_ids"], batch["labels"], rows
    )
    return batch, targets


def test_targets_point_at_letters_words_evidence_and_the_reply(pixel_vlm_setup) -> None:  # type: ignore[no-untyped-def]
    model, processor, _ = pixel_vlm_setup
    batch, targets = _mcq_batch(pixel_vlm_setup, 1)
    assert len(targets) == 1
    t = targets[0]
    ids = batch["input_ids"][0].tolist()
    tokens = processor.tokenizer.convert_ids_to_tokens(ids)
    assert [tokens[p] for p in t.letters] == list(OPTION_LETTERS[: len(t.letters)])
    assert all(tokens[p - 1] == "." for p in t.words)
    visual = {model.config.image_token_id, model.config.video_token_id}
    assert t.evidence and all(ids[p] in visual for p in t.evidence)
    assert tokens[t.reply + 1] == OPTION_LETTERS[t.answer], "the reply's letter follows"
    assert t.letter_ids[t.answer] == ids[t.reply + 1]


def test_a_turn_without_its_evidence_in_view_has_no_target(pixel_vlm_setup) -> None:  # type: ignore[no-untyped-def]
    model, processor, _ = pixel_vlm_setup
    batch, targets = _mcq_batch(pixel_vlm_setup, 1)
    nothing = np.full((10, 18), 99, np.int16)  # no token shows the fact
    rows = [EvidenceRow(0, [nothing, nothing], 0, 0)]
    assert not binding_targets(
        processor.tokenizer, model.config, batch["input_ids"], batch["labels"], rows
    )


def test_open_and_caption_targets_read_the_fact_and_the_carrier_word(pixel_vlm_setup) -> None:  # type: ignore[no-untyped-def]
    model, processor, _ = pixel_vlm_setup
    batch, shown, on_window, fact = _window_batch(pixel_vlm_setup, 3)
    named = caption_carrier(shown, "head")
    assert named is not None
    rows = [
        EvidenceRow(1, shown.facts, fact_index(fact)),
        EvidenceRow(2, shown.carriers, named[0], prefix=named[1]),
    ]
    ids, labels = batch["input_ids"], batch["labels"]
    open_t, caption_t = binding_targets(processor.tokenizer, model.config, ids, labels, rows)
    decode = processor.tokenizer.decode
    assert not open_t.is_mcq and not caption_t.is_mcq
    assert int(labels[1, open_t.reply]) == -100, "the open target is the reply's first token"
    assert fact.startswith(decode([open_t.reads]).strip()), "it reads the fact's first token"
    assert int(ids[1, open_t.reply + 1]) == open_t.reads
    reply = decode(ids[2, caption_t.reply + 1 :].tolist())
    head = shown.needles[0].carrier.split()[-1]
    assert reply.startswith(" " + head), "the caption target reads the carrier's head noun"
    assert head.startswith(decode([caption_t.reads]).strip()), "it reads the head noun"
    assert decode(ids[2, : caption_t.reply + 1].tolist()).endswith(named[1])
    visual = {model.config.image_token_id, model.config.video_token_id}
    assert all(int(ids[2, p]) in visual for p in caption_t.evidence)
    # a caption's evidence is its carrier's tokens, not only the fact's
    assert len(caption_t.evidence) >= len(open_t.evidence)


def test_the_binding_loss_falls_when_trained_and_the_attention_kernel_is_restored(
    pixel_vlm_setup,  # type: ignore[no-untyped-def]
) -> None:
    import torch

    from experiments.pixel_models.vlm_binding import binding_loss
    from experiments.pixel_models.vlm_train import VLMRecipe, train_language

    model, processor, bank = pixel_vlm_setup
    kernel = model.config.text_config._attn_implementation
    train_language(
        model, processor, bank,
        VLMRecipe(
            language_steps=1, language_windows=1, binding_steps=1, binding_batch=2,
            rehearsal_crops=2, warmup=1, threads=1,
        ),
        progress=lambda _: None,
    )  # fmt: skip
    assert model.config.text_config._attn_implementation == kernel

    model.set_attn_implementation({"text_config": "eager"})
    batch, targets = _mcq_batch(pixel_vlm_setup, 2)
    batch.pop("labels")
    optimizer = torch.optim.Adam(model.model.language_model.parameters(), lr=2e-3)
    losses = []
    model.train()
    for _ in range(6):
        out = model(**batch, output_attentions=True, output_hidden_states=True)
        loss = binding_loss(torch, model, out, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.set_attn_implementation({"text_config": kernel})
    model.eval()
    assert np.isfinite(losses).all() and losses[-1] < 0.8 * losses[0]


def test_crop_questions_ask_what_the_crop_shows_or_force_a_guess(pixel_vlm_setup) -> None:  # type: ignore[no-untyped-def]
    from experiments.pixel_models.vlm_data import FACT_CLASSES, crop_questions

    _, _, bank = pixel_vlm_setup
    questions = crop_questions(bank, np.random.default_rng(4), 60)
    guesses = set()
    for q in questions:
        text = q.conversation[1]["content"][0]["text"]
        options = [line[3:] for line in text.splitlines() if line[1:3] == ". "]
        assert len(options) == 4 and q.conversation[1]["content"][1]["type"] == "image"
        answer = options[OPTION_LETTERS.index(q.reply)]
        if q.fact is None:
            guesses.add(q.reply)
        else:
            assert answer == FACT_CLASSES[q.fact], "the reply's option is the fact asked"
            assert (q.facts[0] == q.fact).any(), "and the crop shows it"
    assert len(guesses) > 1, "without the evidence the letter is a guess"
    assert sum(q.fact is not None for q in questions) > len(questions) / 2


def test_the_match_head_starts_with_equal_orthonormal_query_and_key_maps(pixel_vlm_setup) -> None:  # type: ignore[no-untyped-def]
    import torch

    from experiments.pixel_models.vlm_binding import HEAD, MATCH_LAYER, init_match_head
    from experiments.pixel_models.vlm_checkpoint import new_model

    model = new_model(pixel_vlm_setup[1].tokenizer, 1)
    init_match_head(torch, model, seed=0, scale=2.0)
    attention = model.model.language_model.layers[MATCH_LAYER].self_attn
    rows = slice(HEAD * attention.head_dim, (HEAD + 1) * attention.head_dim)
    q, k = attention.q_proj.weight[rows].detach(), attention.k_proj.weight[rows].detach()
    torch.testing.assert_close(q, k)
    torch.testing.assert_close(q @ q.T, 4.0 * torch.eye(attention.head_dim), atol=1e-4, rtol=0)
    other = attention.q_proj.weight[rows.stop :].detach()
    assert not torch.allclose(other @ other.T, 4.0 * torch.eye(len(other))), "one head only"


def test_open_crop_questions_reply_with_the_fact_or_not_visible(pixel_vlm_setup) -> None:  # type: ignore[no-untyped-def]
    from experiments.pixel_models.vlm_checkpoint import NOT_VISIBLE
    from experiments.pixel_models.vlm_data import FACT_CLASSES, crop_questions

    _, _, bank = pixel_vlm_setup
    questions = crop_questions(bank, np.random.default_rng(5), 40, open_share=1.0)
    for q in questions:
        text = q.conversation[1]["content"][0]["text"]
        assert q.is_open and q.answer is None
        assert not any(line[1:3] == ". " for line in text.splitlines()), "no options"
        if q.fact is None:
            assert q.reply == NOT_VISIBLE
        else:
            assert q.reply == FACT_CLASSES[q.fact] and (q.facts[0] == q.fact).any()
    assert {q.reply == NOT_VISIBLE for q in questions} == {True, False}
    mixed = crop_questions(bank, np.random.default_rng(5), 60, open_share=0.5)
    assert 10 < sum(q.is_open for q in mixed) < 50
