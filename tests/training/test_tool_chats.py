"""Distilled episodes as TRL tool chats: the replay, the files, the labels, the SFT on them."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from policies.episode_settings import EpisodeSettings
from policies.training.cli import RULES
from policies.training.distill import DistillConfig, distill
from policies.training.teachers import GroundTruthScriptedTeacher
from policies.training.tool_chats import (
    CLOSING_REPLY,
    ToolChatCollator,
    is_tool_chats,
    load_tool_chats,
    tool_call,
    tool_methods,
    write_tool_chats,
)
from policies.videoscout.record import trained_rules
from video_env.actions.pacing import PacingActionSet
from video_env.actions.types import AnswerAction, RewatchAction, SpeedAction
from video_env.errors import ConfigError
from video_env.synth.suites import load_suite
from video_env.types import Interval

pytest.importorskip("PIL")
SMOKE = RULES["cpu-smoke"]()


@pytest.fixture(scope="module")
def distilled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("distilled")
    samples = load_suite("synth-tiny", limit=3)
    distill(GroundTruthScriptedTeacher(), samples, out, DistillConfig().with_episode(rules=SMOKE))
    return out / "trajectories.jsonl"


@pytest.fixture(scope="module")
def chats(distilled: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    result = write_tool_chats(
        distilled,
        load_suite("synth-tiny", limit=3),
        tmp_path_factory.mktemp("chats"),
        EpisodeSettings(rules=SMOKE),
    )
    assert result.skipped == {} and result.chats == len(_rows(distilled))
    return result.path


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_tool_call_carries_the_action_and_its_notes() -> None:
    assert tool_call(SpeedAction(2, "a note")) == {
        "type": "function",
        "function": {"name": "speed", "arguments": {"factor": 2, "notes": "a note"}},
    }
    assert tool_call(RewatchAction(3))["function"]["arguments"] == {"chunk": 3, "notes": ""}
    answer = tool_call(AnswerAction("B", Interval(4.0, 9.5), "seen"))["function"]
    assert answer == {
        "name": "answer",
        "arguments": {"answer": "B", "start": 4.0, "end": 9.5, "notes": "seen"},
    }
    with pytest.raises(ConfigError, match="window"):
        tool_call(AnswerAction("B"))


def test_each_reply_becomes_a_tool_call_and_each_window_a_tool_result(
    distilled: Path, chats: Path
) -> None:
    parser = PacingActionSet()
    by_id = {row["sample_id"]: row for row in _rows(distilled)}
    assert is_tool_chats(chats) and not is_tool_chats(distilled)
    assert trained_rules(chats.parent) == SMOKE  # the data's rules travel with it
    for chat in _rows(chats):
        trajectory = by_id[chat["sample_id"]]
        messages = chat["messages"]
        roles = [m["role"] for m in messages]
        assert roles == ["system", "user", *["assistant", "tool"] * len(trajectory["replies"]),
                         "assistant"]  # fmt: skip
        assert messages[-1] == {"role": "assistant", "content": CLOSING_REPLY}
        assert chat["reward"] == pytest.approx(trajectory["reward"])
        replies = messages[2:-1:2]
        for reply, message in zip(trajectory["replies"], replies, strict=True):
            action = parser.parse(reply, strict=True)
            (call,) = message["tool_calls"]
            assert call == json.loads(json.dumps(tool_call(action)))
            assert message["content"] and message["content"] in reply  # the thought
        first_window = messages[1]["content"]
        images = [p["image"] for p in first_window if p["type"] == "image"]
        assert len(images) == SMOKE.speeds[1].frames
        assert all((chats.parent / name).is_file() for name in images)
        assert "over" in messages[-2]["content"]  # the answer's result, a string as TRL's


def test_an_episode_that_does_not_replay_is_left_out(distilled: Path, tmp_path: Path) -> None:
    rows = _rows(distilled)
    rows[0]["reward"] += 0.5
    rows[1]["replies"] = rows[1]["replies"][:-1]  # never answers
    rows[2]["replies"] = ["<think>x</think><memory>y</memory><action>speed(3x)</action>"]
    changed = tmp_path / "trajectories.jsonl"
    changed.write_text("".join(json.dumps(r) + "\n" for r in rows))
    samples = load_suite("synth-tiny", limit=3)
    result = write_tool_chats(
        changed, samples[1:], tmp_path / "chats", EpisodeSettings(rules=SMOKE)
    )
    assert "not among" in result.skipped[rows[0]["sample_id"]]
    assert "did not end" in result.skipped[rows[1]["sample_id"]]
    result = write_tool_chats(changed, samples, tmp_path / "chats", EpisodeSettings(rules=SMOKE))
    assert "replayed reward" in result.skipped[rows[0]["sample_id"]]
    assert "turn 1" in result.skipped[rows[2]["sample_id"]]  # a malformed action
    assert result.chats == len(rows) - 3


def test_the_collator_labels_the_assistant_turns_only(chats: Path, tiny_qwen_dir: str) -> None:
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("trl")
    processor = transformers.AutoProcessor.from_pretrained(tiny_qwen_dir)
    dataset = load_tool_chats(chats)
    batch = ToolChatCollator(processor, tool_methods())([dataset[0]])
    tok = processor.tokenizer
    ids, labels = batch["input_ids"][0], batch["labels"][0]
    labelled = tok.decode(ids[labels != -100])
    messages = json.loads(dataset[0]["chat"])["messages"]
    assert labelled.count("<tool_call>") == len(messages[2:-1:2])
    assert CLOSING_REPLY in labelled and "Question:" not in labelled
    assert "<tools>" in tok.decode(ids) and "<tool_response>" in tok.decode(ids)
    assert labels[ids == processor.image_token_id].eq(-100).all()
    assert int((ids == processor.image_token_id).sum()) > 0
    with pytest.raises(ConfigError, match="positions"):
        ToolChatCollator(processor, tool_methods(), max_length=64)([dataset[0]])


def test_sft_refuses_an_extension_of_think_act_turns_for_tool_chats(
    chats: Path, tmp_path: Path
) -> None:
    pytest.importorskip("trl")
    from policies.training.sft import SFTSettings, train_sft

    extension: Any = object()  # refused before any of its methods is called
    with pytest.raises(ConfigError, match="tool chats"):
        train_sft("unused", chats, tmp_path / "sft", SFTSettings(), extension=extension)


def test_sft_context_is_raised_never_lowered() -> None:
    transformers = pytest.importorskip("transformers")
    from policies.training.sft import SFTSettings, with_context

    config = transformers.Qwen2_5_VLConfig(text_config={"max_position_embeddings": 8192})
    assert with_context(config, 0) == 8192 and config.text_config.max_position_embeddings == 8192
    assert with_context(config, 20000) == 8192
    assert config.get_text_config().max_position_embeddings == 20000
    with pytest.raises(ConfigError, match="raised, not lowered"):
        with_context(config, 4096)
    with pytest.raises(ConfigError, match="context"):
        SFTSettings(context=-1)
    with pytest.raises(ConfigError, match="no max_position_embeddings"):
        with_context(transformers.PretrainedConfig(), 4096)


@pytest.mark.slow
def test_train_tool_chats_then_sft_learns_the_calls(
    distilled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command writes the chats and counts their positions; SFT on them lowers the loss."""
    transformers = pytest.importorskip("transformers")
    from policies.training.sft import SFTSettings, train_sft
    from video_env.backends.testing import tiny_qwen2_5_vl
    from video_env.cli import main

    base = tiny_qwen2_5_vl(tmp_path / "base", init_range=0.02)
    out = tmp_path / "chats"
    assert main(["train", "tool-chats", "--trajectories", str(distilled), "--out", str(out),
                 "--suite", "synth-tiny", "--limit", "3", "--model", str(base)]) == 0  # fmt: skip
    assert trained_rules(out) == SMOKE  # the distill run's rules, read from its folder
    found = re.search(r"largest ([\d,]+); (\d) of 3 chats fit its 4,096", capsys.readouterr().out)
    assert found is not None and int(found[1].replace(",", "")) > 4096 and int(found[2]) < 3
    settings = SFTSettings(learning_rate=3e-3, batch_size=1, per_device_batch=1, max_steps=6,
                           warmup_ratio=0.0, scheduler="constant", progress_bar=False,
                           context=16384)  # a longer context: they fit  # fmt: skip
    result = train_sft(str(base), out / "tool_chats.jsonl", tmp_path / "sft", settings)
    assert result.steps == 6 and result.losses[-1] < result.losses[0] - 0.5
    saved_config = json.loads((tmp_path / "sft" / "config.json").read_text())
    assert saved_config["text_config"]["max_position_embeddings"] == 16384  # kept for TRL
    record = json.loads((tmp_path / "sft" / "sft.json").read_text())
    assert record["context"] == {"base": 4096, "trained": 16384}
    saved = transformers.AutoProcessor.from_pretrained(tmp_path / "sft")
    assert "<tool_call>" in saved.chat_template  # what `train trl` renders and parses
    assert trained_rules(tmp_path / "sft") == SMOKE
