"""The pixel VLM: its training data, a few-step training run, loading, labels and specs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

from experiments.pixel_models.vlm_checkpoint import NOT_VISIBLE
from experiments.pixel_models.vlm_data import (
    CARRIER_CLASSES,
    FACT_CLASSES,
    MAX_FED,
    FrameBank,
    Window,
    caption_reply,
    paste_needle,
    readable,
    token_labels,
    turns,
)
from video_env.pixel import PIXEL_VLM_DIR, PIXEL_VLM_MARKER, is_pixel_vlm
from video_env.pixel.splits import split_videos
from video_env.types import OPTION_LETTERS
from video_env.video.base import Size

SHIPPED = is_pixel_vlm(PIXEL_VLM_DIR)


@pytest.fixture(scope="module")
def video():  # type: ignore[no-untyped-def]
    return split_videos("train", 1)[0]


def test_token_labels_follow_the_needle_box(video) -> None:  # type: ignore[no-untyped-def]
    needle = video.needles[0]
    t = (needle.start + needle.end) / 2
    render = Size(1280, 720)
    carrier, fact = token_labels(video, t, render, MAX_FED)
    assert carrier.shape == (MAX_FED.height // 28, MAX_FED.width // 28)
    marked = np.argwhere(carrier == CARRIER_CLASSES.index(needle.carrier))
    assert len(marked), "the needle's tokens are labelled"
    (_, (x0, y0, x1, y1)), *_ = video.needle_boxes(t, render)
    scale = MAX_FED.width / render.width
    centre_col = int((x0 + x1) / 2 * scale // 28)
    centre_row = int((y0 + y1) / 2 * scale // 28)
    assert [centre_row, centre_col] in marked.tolist()
    if readable(needle):
        assert (fact[carrier < len(CARRIER_CLASSES)] == FACT_CLASSES.index(needle.fact)).all()
    else:
        assert (fact == len(FACT_CLASSES)).all()
    free = next(
        float(t) for t in np.arange(0, video.duration, 1.0) if not video.needles_at(float(t))
    )
    empty, _ = token_labels(video, free, render, MAX_FED)
    assert (empty == len(CARRIER_CLASSES)).all()


def test_a_pasted_needle_changes_pixels_and_labels() -> None:
    rng = np.random.default_rng(3)
    image = np.full((224, 224, 3), 128, np.uint8)
    carrier = np.full((8, 8), len(CARRIER_CLASSES), np.int16)
    fact = np.full((8, 8), len(FACT_CLASSES), np.int16)
    for _ in range(5):
        paste_needle(image, carrier, fact, rng)
    changed = (image != 128).any(axis=2)
    labelled = carrier < len(CARRIER_CLASSES)
    assert changed.any() and labelled.any()
    rows, cols = np.nonzero(labelled)
    for r, c in zip(rows, cols, strict=True):  # every labelled token has drawn pixels
        assert changed[r * 28 : (r + 1) * 28, c * 28 : (c + 1) * 28].any()


def _window(video, needle, in_view: bool) -> Window:  # type: ignore[no-untyped-def]
    t = (needle.start + needle.end) / 2 if in_view else 0.0
    pixels = video.frames([t, t + 0.5], size=(504, 280))
    needles = (needle,) if in_view else ()
    return Window(pixels, (t, t + 0.5), video, needles, video.scene_at(t).description)


def test_turn_replies_say_what_the_frames_show(video) -> None:  # type: ignore[no-untyped-def]
    needle = next(n for n in video.needles if readable(n))
    shown = _window(video, needle, in_view=True)
    rng = np.random.default_rng(0)
    for _ in range(12):
        (mcq, letter), (open_q, reply), (caption, text) = turns(shown, rng)
        prompt = mcq[1]["content"][0]["text"]
        if needle.question not in prompt:
            continue  # another needle of the video, not in view
        options = [line[3:] for line in prompt.splitlines() if line[:2] in ("A.", "B.", "C.", "D.")]
        assert options[OPTION_LETTERS.index(letter)] == needle.fact
        assert reply == needle.fact
        assert needle.statement in text and text.startswith(shown.scene)
        assert caption[1]["content"][1]["type"] == "video"
    assert caption_reply(_window(video, needle, in_view=False)) == video.scene_at(0.0).description


def test_the_caption_target_stops_before_the_second_word_or_the_head_noun(video) -> None:  # type: ignore[no-untyped-def]
    from experiments.pixel_models.vlm_data import caption_carrier

    for needle in video.needles:
        shown = _window(video, needle, in_view=True)
        said = caption_reply(shown)
        phrase = said.split("; ", 1)[1]
        label, before = caption_carrier(shown) or (-1, "")
        assert CARRIER_CLASSES[label] == needle.carrier
        assert before == f"{shown.scene}; {phrase.split()[0]}"
        label, before = caption_carrier(shown, "head") or (-1, "")
        assert said.startswith(f"{before} {needle.carrier.split()[-1]}"), (before, said)
    assert caption_carrier(_window(video, video.needles[0], in_view=False)) is None
    with pytest.raises(ValueError, match="word"):
        caption_carrier(_window(video, video.needles[0], in_view=True), "third")


def test_without_the_evidence_the_open_reply_is_not_visible(video) -> None:  # type: ignore[no-untyped-def]
    needle = next(n for n in video.needles if readable(n))
    shown = _window(video, needle, in_view=False)
    rng = np.random.default_rng(1)
    letters = set()
    for _ in range(40):
        (_, letter), (_, reply), _ = turns(shown, rng)
        assert reply == NOT_VISIBLE
        letters.add(letter)
    assert len(letters) == 4, "a forced guess is uniform over the options"


def test_a_few_steps_of_training_write_a_plain_transformers_checkpoint(
    tmp_path: Path,
) -> None:
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from experiments.pixel_models.vlm_pipeline import train_pixel_vlm
    from experiments.pixel_models.vlm_train import VLMRecipe
    from video_env.backends.transformers_vlm import TransformersVLM

    recipe = VLMRecipe(
        train_videos=1, check_videos=0, vision_steps=2, vision_batch=2, language_steps=2,
        language_windows=1, binding_steps=2, binding_batch=2, rehearsal_crops=1, warmup=1,
        threads=1,
    )  # fmt: skip
    meta = train_pixel_vlm(recipe, tmp_path, progress=lambda _: None)
    assert meta["recipe"]["vision_steps"] == 2 and meta["data_digest"]
    assert json.loads((tmp_path / PIXEL_VLM_MARKER).read_text())["parameters"] > 1e6
    from policies.videoscout.record import trained_rules
    from video_env.envs.pacing_rules import pixel_vlm_rules

    assert trained_rules(tmp_path) == pixel_vlm_rules(), "VideoScout runs it on its 16:9 frames"
    model = AutoModelForImageTextToText.from_pretrained(tmp_path, local_files_only=True)
    processor = AutoProcessor.from_pretrained(tmp_path, local_files_only=True)
    assert type(model).__name__ == "Qwen2_5_VLForConditionalGeneration"
    assert processor.image_processor.size["longest_edge"] == 512 * 288
    vlm = TransformersVLM(str(tmp_path), device="cpu", answer_max_tokens=3)
    assert vlm.pixel_vlm and not vlm.random_weights
    assert vlm.max_pixels == 512 * 288, "the processor's own budget is fed"
    from video_env.backends.base import FrameBatch
    from video_env.types import Interval

    video = split_videos("test", 1)[0]
    frames = FrameBatch.sample(video, Interval(0.0, 4.0), 4, (1280, 720))
    answer = vlm.answer(frames, video.needles[0].question, ["a", "b", "c", "d"])
    assert 0.0 <= answer.confidence <= 1.0
    assert vlm.last_call is not None and vlm.last_call.frames[0][1] == Size(504, 280)


def test_a_bank_gives_crops_with_needles() -> None:
    video = split_videos("train", 1)[0]
    bank = FrameBank()
    bank.add_video(video, np.random.default_rng(0), empty=2)
    images, carriers, facts, scenes = bank.crops(np.random.default_rng(1), 6, needle_share=1.0)
    assert images.shape == (6, 224, 224, 3) and carriers.shape == (6, 8, 8)
    assert all((c < len(CARRIER_CLASSES)).any() for c in carriers)
    assert len(scenes) == 6 and facts.max() <= len(FACT_CLASSES)


def test_the_language_check_scores_the_tokens_read_off_the_evidence() -> None:
    import re

    from experiments.pixel_models.vlm_checkpoint import build_processor, new_model, new_tokenizer
    from experiments.pixel_models.vlm_train import language_accuracy

    video = split_videos("calib", 1)[0]
    bank = FrameBank()
    bank.add_video(video, np.random.default_rng(0), empty=2)
    tokenizer = new_tokenizer()
    note = language_accuracy(new_model(tokenizer, 0), build_processor(tokenizer), bank, 0, n=2)
    shares = [float(x) for x in re.findall(r"\d\.\d\d", note)]
    assert note.startswith("read off the evidence") and len(shares) == 3
    assert [w for w in note.split() if w.isalpha()][-3:] == ["mcq", "open", "caption"]
    assert all(0.0 <= x <= 1.0 for x in shares)


def test_one_vision_pass_per_window_gives_the_same_logits_as_every_turns_pixels() -> None:
    import torch

    from experiments.pixel_models.vlm_checkpoint import build_processor, new_model, new_tokenizer
    from experiments.pixel_models.vlm_data import window
    from experiments.pixel_models.vlm_train import accepts_encoder_outputs, shared_vision
    from policies.training.turn_encoding import TurnExample, collate_turns

    video = split_videos("train", 1)[0]
    bank = FrameBank()
    bank.add_video(video, np.random.default_rng(0), empty=2)
    tokenizer = new_tokenizer()
    model, processor = new_model(tokenizer, 0).eval(), build_processor(tokenizer)
    if not accepts_encoder_outputs(model):
        pytest.skip("this transformers takes no precomputed vision outputs")
    rng = np.random.default_rng(3)
    shown = [window(bank, rng) for _ in range(12)]
    one = next(w for w in shown if len(w.times) == 1)
    many = [w for w in shown if len(w.times) > 1][:2]
    examples: list[TurnExample] = []
    windows: list[tuple[str, int]] = []
    for w in (many[0], one, many[1]):  # video, image, video: the kinds interleave
        on_window = [TurnExample(c, reply) for c, reply in turns(w, rng)]
        examples += on_window
        windows.append(("image" if len(w.times) == 1 else "video", len(on_window)))
    batch = collate_turns(processor, examples)
    batch.pop("labels")
    with torch.no_grad():
        expected = model(**batch).logits
        shared_vision(model, batch, windows)
        assert "pixel_values" not in batch and "pixel_values_videos" not in batch
        got = model(**batch).logits
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


def test_the_train_vlm_command_passes_its_stage_2_settings_to_the_recipe() -> None:
    import argparse

    from experiments.pixel_models.cli import add_vlm_command, vlm_recipe
    from experiments.pixel_models.vlm_train import VLMRecipe

    parser = argparse.ArgumentParser()
    add_vlm_command(parser.add_subparsers())
    args = parser.parse_args(
        [
            "vlm", "--binding-open", "0.5", "--open-crops", "0.25", "--rehearsal-crops", "3",
            "--caption-word", "head", "--no-soft-guesses", "--no-align-carriers",
        ]
    )  # fmt: skip
    recipe = vlm_recipe(args)
    assert (recipe.binding_open, recipe.open_crops, recipe.rehearsal_crops) == (0.5, 0.25, 3)
    assert recipe.caption_word == "head"
    assert not recipe.soft_guesses and not recipe.align_carriers
    defaults = vlm_recipe(parser.parse_args(["vlm"]))
    assert defaults == VLMRecipe(), "no flag: the shipped recipe"
