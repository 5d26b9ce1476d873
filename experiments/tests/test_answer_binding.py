"""Binding targets in the lab's SFT (``sft --binding``): which turns, where, and a fall.

The turns come from the lead teacher on one pixel-real training video with small frames
(4 frames of 224x112 a window), the question before the frames as the shipped
checkpoint's data.
"""

import json
from pathlib import Path
from typing import Any

import pytest

from experiments.pixel_models.vlm_data import MCQ_OPTIONS
from experiments.videoscout_pixel.answer_binding import THOUGHT_OPENING, AnswerEvidence
from experiments.videoscout_pixel.frame_teacher import FrameScriptedTeacher
from experiments.videoscout_pixel.option_orders import prompt_options, with_option_orders
from experiments.videoscout_pixel.sft_extension import PixelTurnExtension
from policies.training.cli import split_samples
from policies.training.distill import DistillConfig, distill
from policies.videoscout.prompt import PromptLayout
from video_env.envs.pacing_rules import PacingRules, SpeedSpec
from video_env.types import OPTION_LETTERS

pytest.importorskip("trl")
pytest.importorskip("transformers")

SMALL = PacingRules(
    speeds={
        1: SpeedSpec(4, 224, 1, 112),
        2: SpeedSpec(4, 224, 2, 112),
        4: SpeedSpec(2, 224, 4, 112),
    },
    rewatch=SpeedSpec(4, 224, 1, 112),
)


@pytest.fixture(scope="module")
def turns(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lead")
    teacher = FrameScriptedTeacher(SMALL, style="lead", guess_share=0.5)
    config = DistillConfig(tries=1).with_episode(
        rules=SMALL, layout=PromptLayout(question_first=True)
    )
    distill(teacher, split_samples("train", 1), out, config)
    return out / "turns.jsonl"


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def _options(row: dict[str, Any]) -> dict[str, str]:
    return dict(zip(OPTION_LETTERS, prompt_options(row), strict=False))


def test_only_right_lead_answers_whose_fact_is_in_view_get_evidence(turns: Path) -> None:
    rows = _rows(turns)
    evidence = AnswerEvidence()
    found = {i: evidence.row(row, i) for i, row in enumerate(rows)}
    sighted = {i: e for i, e in found.items() if e is not None}
    assert sighted, "the lead teacher answers some MCQs on sight"
    assert len(sighted) < sum('answer("' in r["completion"][-1]["content"] for r in rows)
    for i, e in sighted.items():
        reply = rows[i]["completion"][-1]["content"]
        letter = OPTION_LETTERS[e.answer]
        assert reply.startswith(f"{THOUGHT_OPENING}{letter} (") and "?" not in reply.split(":")[0]
        assert rows[i]["sample_id"].endswith("/mcq")
        assert any((grid == e.label).any() for grid in e.grids)
        assert len(e.grids) == len(rows[i]["images"])
    for i, row in enumerate(rows):  # open answers and guesses have none
        reply = row["completion"][-1]["content"]
        if row["sample_id"].endswith("/open") or "? A guess" in reply:
            assert i not in sighted


def test_rotated_options_move_the_evidence_letter_with_them(turns: Path) -> None:
    rows = _rows(turns)
    evidence = AnswerEvidence()
    rotated = with_option_orders(rows, 4)
    letters = {}
    for row in rotated:
        e = evidence.row(row, 0)
        if e is None:
            continue
        options = _options(row)
        needle = row["sample_id"]
        assert options[OPTION_LETTERS[e.answer]] in row["completion"][-1]["content"]
        letters.setdefault(needle, set()).add(e.answer)
    assert letters and all(len(found) == MCQ_OPTIONS for found in letters.values())


def test_targets_read_the_letter_after_the_thoughts_opening(turns: Path) -> None:
    from experiments.pixel_models.vlm_binding import binding_targets
    from policies.training.turn_inputs import collate_turns, conversation_from_row
    from video_env.pixel import PIXEL_VLM_DIR

    transformers = pytest.importorskip("transformers")
    processor = transformers.AutoProcessor.from_pretrained(str(PIXEL_VLM_DIR))
    config = transformers.AutoConfig.from_pretrained(str(PIXEL_VLM_DIR))
    rows = [r for r in _rows(turns) if AnswerEvidence().row(r, 0) is not None][:3]
    batch = collate_turns(processor, [conversation_from_row(r) for r in rows])
    evidence = AnswerEvidence().rows(rows)
    targets = binding_targets(
        processor.tokenizer, config, batch["input_ids"], batch["labels"], evidence
    )
    assert len(targets) == len(rows)
    tokenizer = processor.tokenizer
    visual = {config.image_token_id, config.video_token_id}
    for t, row in zip(targets, rows, strict=True):
        ids = batch["input_ids"][t.row].tolist()
        options = _options(row)
        assert [tokenizer.decode([ids[w]]).strip() for w in t.words] == list(options.values())
        opening = len(tokenizer(THOUGHT_OPENING, add_special_tokens=False)["input_ids"])
        assert tokenizer.decode(ids[t.reply - opening + 1 : t.reply + 1]) == THOUGHT_OPENING
        assert ids[t.reply + 1] == t.reads == t.letter_ids[t.answer]
        assert {ids[p] for p in t.evidence} <= visual


def test_open_answers_get_evidence_only_when_bound_and_right_with_the_fact_in_view(
    turns: Path,
) -> None:
    rows = _rows(turns)
    bound = AnswerEvidence(open_answers=True)
    found = {i: bound.row(row, i) for i, row in enumerate(rows)}
    opened = {i: e for i, e in found.items() if e is not None and e.answer is None}
    assert opened, "the lead teacher answers some open questions on sight"
    for i, e in opened.items():
        reply = rows[i]["completion"][-1]["content"]
        assert rows[i]["sample_id"].endswith("/open")
        assert reply.startswith(THOUGHT_OPENING) and "?" not in reply.split(":")[0]
        assert any((grid == e.label).any() for grid in e.grids)
    mcq = {i for i, e in found.items() if e is not None and e.answer is not None}
    assert mcq == {i for i, row in enumerate(rows) if AnswerEvidence().row(row, i)}
    assert not set(opened) & mcq


def test_open_targets_read_the_fact_words_first_token_after_the_thoughts_opening(
    turns: Path,
) -> None:
    from experiments.pixel_models.vlm_binding import binding_targets
    from policies.training.turn_inputs import collate_turns, conversation_from_row
    from video_env.pixel import PIXEL_VLM_DIR

    transformers = pytest.importorskip("transformers")
    processor = transformers.AutoProcessor.from_pretrained(str(PIXEL_VLM_DIR))
    config = transformers.AutoConfig.from_pretrained(str(PIXEL_VLM_DIR))
    bound = AnswerEvidence(open_answers=True)
    opened = (r for r in _rows(turns) if r["sample_id"].endswith("/open") and bound.row(r, 0))
    rows = list(opened)[:3]
    batch = collate_turns(processor, [conversation_from_row(r) for r in rows])
    targets = binding_targets(
        processor.tokenizer, config, batch["input_ids"], batch["labels"], bound.rows(rows)
    )
    assert len(targets) == len(rows) and not any(t.is_mcq for t in targets)
    for t, row in zip(targets, rows, strict=True):
        ids = batch["input_ids"][t.row].tolist()
        word = row["completion"][-1]["content"][len(THOUGHT_OPENING) :].split(":")[0]
        assert ids[t.reply + 1] == t.reads
        assert word.startswith(processor.tokenizer.decode([t.reads]))


def test_the_binding_term_joins_the_loss_with_its_weight_and_the_checkpoint_stays_plain(
    turns: Path, tmp_path: Path
) -> None:
    import transformers

    from policies.training.sft import SFTSettings, train_sft
    from video_env.pixel import PIXEL_VLM_DIR

    sighted = tmp_path / "sighted.jsonl"
    rows = [r for r in _rows(turns) if AnswerEvidence().row(r, 0) is not None][:2]
    sighted.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    records = {}
    for weight in (0.0, 2.0):  # one step at learning rate 0: the same model, the same batch
        settings = SFTSettings(learning_rate=0.0, max_steps=1, batch_size=2, per_device_batch=2,
                               progress_bar=False, freeze_vision=True)  # fmt: skip
        out = tmp_path / f"sft-{weight}"
        extension = PixelTurnExtension(binding=weight)
        train_sft(str(PIXEL_VLM_DIR), sighted, out, settings, extension=extension)
        records[weight] = json.loads((out / "sft.json").read_text("utf-8"))
    assert "binding" not in records[0.0] and records[2.0]["binding_rows"] == len(rows)
    (bound,) = records[2.0]["binding"]
    assert bound > 0.0
    plain = records[0.0]["losses"][0]
    assert records[2.0]["losses"][0] == pytest.approx(plain + 2.0 * bound, rel=1e-3)
    config = transformers.AutoConfig.from_pretrained(str(tmp_path / "sft-2.0"))
    assert config.text_config._attn_implementation != "eager"


def test_binding_on_turns_without_sighted_lead_answers_is_refused(tmp_path: Path) -> None:
    from policies.training.sft import SFTSettings, train_sft
    from video_env.errors import ConfigError
    from video_env.pixel import PIXEL_VLM_DIR

    data = tmp_path / "scenes"
    teacher = FrameScriptedTeacher(SMALL, style="scenes")
    distill(
        teacher,
        split_samples("train", 1, limit=2),
        data,
        DistillConfig(tries=1).with_episode(rules=SMALL),
    )
    settings = SFTSettings(max_steps=1, batch_size=2, per_device_batch=2)
    bound = PixelTurnExtension(binding=1.0)
    with pytest.raises(ConfigError, match="0 such turns"):
        train_sft(str(PIXEL_VLM_DIR), data / "turns.jsonl", tmp_path / "sft", settings,
                  extension=bound)  # fmt: skip


def test_binding_weight_must_not_be_negative() -> None:
    from video_env.errors import ConfigError

    with pytest.raises(ConfigError, match="binding"):
        PixelTurnExtension(binding=-1.0)
    with pytest.raises(ConfigError, match="needs binding > 0"):  # a flag that would do nothing
        PixelTurnExtension(binding_letters=False)
    with pytest.raises(ConfigError, match="needs binding > 0"):
        PixelTurnExtension(binding_open=True)


def test_the_circuit_probe_finds_the_pixel_vlms_word_letters_at_a_lead_answer(turns: Path) -> None:
    from experiments.videoscout_pixel.circuit_probe import MEASURES, circuit, sighted_turns
    from video_env.pixel import PIXEL_VLM_DIR

    rows = sighted_turns(turns)[:2]
    found = circuit(str(PIXEL_VLM_DIR), rows)
    assert set(found) == set(MEASURES) and all(len(v) == len(rows) for v in found.values())
    assert all(0.0 <= x <= 1.0 + 1e-6 for v in found.values() for x in v)
    assert min(found["words name letters"]) >= 0.75  # the binding's first hop, as trained


def test_the_open_circuit_probe_finds_the_pixel_vlms_last_hop_at_an_open_answer(
    turns: Path,
) -> None:
    from experiments.videoscout_pixel.circuit_probe import (
        OPEN_MEASURES,
        open_circuit,
        sighted_turns,
    )
    from video_env.pixel import PIXEL_VLM_DIR

    rows = sighted_turns(turns, open_answers=True)[:2]
    assert rows and all(r["sample_id"].endswith("/open") for r in rows)
    assert not {r["id"] for r in rows} & {r["id"] for r in sighted_turns(turns)}
    found = open_circuit(str(PIXEL_VLM_DIR), rows)
    assert set(found) == set(OPEN_MEASURES) and all(len(v) == len(rows) for v in found.values())
    assert all(0.0 <= x <= 1.0 + 1e-6 for v in found.values() for x in v)
    assert all(x in (0.0, 1.0) for x in found["word"])  # one greedy token per turn


def test_the_binding_term_moves_the_weights(turns: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    from policies.training.sft import SFTSettings, train_sft
    from video_env.pixel import PIXEL_VLM_DIR

    sighted = tmp_path / "sighted.jsonl"
    rows = [r for r in _rows(turns) if AnswerEvidence().row(r, 0) is not None][:2]
    sighted.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    weights = {}
    for weight in (1e-9, 10.0):  # the same path and batch; only the targets' pull differs
        settings = SFTSettings(learning_rate=1e-3, max_steps=1, batch_size=2, per_device_batch=2,
                               warmup_ratio=0.0, scheduler="constant", progress_bar=False,
                               freeze_vision=True)  # fmt: skip
        train_sft(str(PIXEL_VLM_DIR), sighted, tmp_path / f"sft-{weight}", settings,
                  extension=PixelTurnExtension(binding=weight))  # fmt: skip
        weights[weight] = load_file(str(tmp_path / f"sft-{weight}" / "model.safetensors"))
    matcher = "model.layers.1.self_attn.k_proj.weight"  # the matching hop's key map
    assert not (weights[1e-9][matcher] == weights[10.0][matcher]).all()


def test_frozen_language_layers_keep_their_weights_through_sft(turns: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    from policies.training.sft import SFTSettings, train_sft
    from video_env.pixel import PIXEL_VLM_DIR

    settings = SFTSettings(learning_rate=1e-3, max_steps=1, batch_size=2, per_device_batch=2,
                           warmup_ratio=0.0, scheduler="constant", progress_bar=False,
                           freeze_vision=True, freeze_layers=2)  # fmt: skip
    train_sft(str(PIXEL_VLM_DIR), turns, tmp_path / "sft", settings)
    before = load_file(str(PIXEL_VLM_DIR / "model.safetensors"))
    after = load_file(str(tmp_path / "sft" / "model.safetensors"))
    layer = "model.layers.{}.self_attn.q_proj.weight"
    assert (before[layer.format(0)] == after[layer.format(0)]).all()
    assert (before[layer.format(1)] == after[layer.format(1)]).all()
    assert not (before[layer.format(2)] == after[layer.format(2)]).all()


def test_attention_only_targets_drop_the_letters_term(turns: Path, tmp_path: Path) -> None:
    from policies.training.sft import SFTSettings, train_sft
    from video_env.pixel import PIXEL_VLM_DIR

    sighted = tmp_path / "sighted.jsonl"
    rows = [r for r in _rows(turns) if AnswerEvidence().row(r, 0) is not None][:2]
    sighted.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    first = {}
    for letters in (True, False):  # the same weights and batch at the first step
        settings = SFTSettings(learning_rate=1e-3, max_steps=1, batch_size=2, per_device_batch=2,
                               warmup_ratio=0.0, scheduler="constant", progress_bar=False,
                               freeze_vision=True)  # fmt: skip
        out = tmp_path / f"sft-{letters}"
        extension = PixelTurnExtension(binding=1.0, binding_letters=letters)
        train_sft(str(PIXEL_VLM_DIR), sighted, out, settings, extension=extension)
        record = json.loads((out / "sft.json").read_text("utf-8"))
        assert record["extension"]["binding_letters"] is letters
        assert len(record["grad_norms"]) == len(record["losses"]) and record["grad_norms"][0] > 0
        first[letters] = record["binding"][0]
    assert 0 < first[False] < first[True]  # the letters' cross-entropy is gone, attention stays
