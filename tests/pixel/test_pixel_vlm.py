"""The pixel VLM: its training data, a few-step training run, loading, labels and specs."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

from video_env.pixel import PIXEL_VLM_DIR, PIXEL_VLM_MARKER, is_pixel_vlm
from video_env.pixel.splits import split_videos
from video_env.types import OPTION_LETTERS

SHIPPED = is_pixel_vlm(PIXEL_VLM_DIR)


@pytest.fixture(scope="module")
def video():  # type: ignore[no-untyped-def]
    return split_videos("train", 1)[0]


def test_pixel_vlm_specs_and_labels(tmp_path: Path) -> None:
    from benchmarks.config import BenchConfig
    from video_env.backends.registry import parse_spec
    from video_env.errors import ConfigError

    assert parse_spec("captioner", f"pixel-vlm:{tmp_path}").target == str(tmp_path)
    assert parse_spec("vlm", f"pixel-vlm:{tmp_path}").kind == "transformers"
    if SHIPPED:
        assert parse_spec("vlm", "pixel-vlm").target == str(PIXEL_VLM_DIR)
        config = BenchConfig(perception="pixel-vlm")
        specs = config.perception_specs()
        assert specs == {"vlm": "pixel-vlm", "captioner": "pixel-vlm", "clip": "pixel-real"}
        assert config.perception_label == "pixel-vlm"
    else:
        with pytest.raises(ConfigError, match=r"experiments\.pixel_models vlm"):
            parse_spec("vlm", "pixel-vlm")
        with pytest.raises(ConfigError, match=r"experiments\.pixel_models vlm"):
            BenchConfig(perception="pixel-vlm")
    (tmp_path / PIXEL_VLM_MARKER).write_text("{}")
    spec = f"pixel-vlm:{tmp_path}"
    config = BenchConfig(perception="pixel-vlm", vlm=spec, captioner=spec)
    assert config.perception_specs()["clip"] == "pixel-real"
    assert config.perception_label == "pixel-vlm"


@pytest.mark.skipif(not SHIPPED, reason="the pixel VLM is not shipped in this checkout")
def test_plain_transformers_reads_a_colour_from_a_rendered_frame() -> None:
    """No project code between the checkpoint and ``generate``: processor, template, model.

    The colour is asked as FALCON-Bench's MCQ, with the right colour under each letter in
    turn: the reply must follow it (the shipped model reads MCQs; docs/pixel_vlm.md).
    """
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from video_env.backends.vlm_prompts import question_prompt

    model = AutoModelForImageTextToText.from_pretrained(PIXEL_VLM_DIR, local_files_only=True)
    processor = AutoProcessor.from_pretrained(PIXEL_VLM_DIR, local_files_only=True)
    video, needle = next(
        (v, n) for v in split_videos("test", 6) for n in v.needles
        if n.fact in ("red", "blue", "green", "yellow") and n.pixel_size > 80
    )  # fmt: skip
    t = (needle.start + needle.end) / 2
    frame = video.frames([t], size=(1280, 720))[0]
    replies = []
    for k in range(4):
        options = list(needle.distractors)
        options.insert(k, needle.fact)
        messages = [
            {"role": "user", "content": [
                {"type": "text", "text": question_prompt(needle.question, options)},
                {"type": "image"},
            ]},
        ]  # fmt: skip
        text = processor.apply_chat_template(messages, add_generation_prompt=True)
        inputs = processor(text=[text], images=[frame], return_tensors="pt")
        out = model.generate(**inputs, max_new_tokens=3, do_sample=False)
        new = out[:, inputs["input_ids"].shape[1] :]
        replies.append(processor.batch_decode(new, skip_special_tokens=True)[0].strip())
    assert replies == list(OPTION_LETTERS[:4])


@pytest.mark.skipif(not SHIPPED, reason="the pixel VLM is not shipped in this checkout")
def test_pacing_under_the_pixel_vlm_plays_the_size_it_reads() -> None:
    from video_env.envs.pacing import PacingEnv
    from video_env.envs.pacing_rules import PacingRules, rules_name
    from video_env.synth.suites import load_suite

    samples = load_suite("synth-glimpse", forms=["mcq"], limit=1)
    assert rules_name(PacingEnv(samples).rules) == "paper"  # simulated
    env = PacingEnv(samples, vlm="pixel-vlm", pixel_observations=True)
    assert rules_name(env.rules) == "pixel-vlm"
    obs, _ = env.reset(seed=0)
    assert obs["frames"].shape[1:] == (280, 504, 3)  # the pixel VLM's 16:9 fed size
    assert env.abandon("test")["pacing_rules"] == "pixel-vlm"
    assert rules_name(PacingEnv(samples, vlm="pixel-vlm", rules=PacingRules()).rules) == "paper"
