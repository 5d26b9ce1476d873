"""The VideoScout-on-the-pixel-VLM study: format validity, kept episodes, fixed schedules."""

import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from experiments.videoscout_pixel.videoscout_pixel import (
    COLUMNS,
    format_table,
    format_valid,
    policy_rows,
    run_baseline,
    summarise,
)
from policies.training.cli import split_samples
from video_env.types import VideoQA

pytest.importorskip("transformers")


def test_the_videoscout_study_scores_format_validity_and_clusters_by_video() -> None:
    good = (
        "<think>0-29 s: a park.</think><memory>Watched up to 29 s.</memory>"
        "<action>speed(2x)</action>"
    )
    assert format_valid(good)
    assert not format_valid("C")
    assert not format_valid("<think>x</think><action>speed(2x)</action>"), "no notes"
    rows = [{"model": "m", "video": v, **dict.fromkeys(COLUMNS, float(v == "a"))} for v in "aab"]
    summary = summarise(rows)
    mean, low, high = summary["m"]["format_valid"]
    assert mean == pytest.approx(2 / 3, abs=1e-3) and low <= mean <= high
    assert summary["m"]["episodes"] == 3
    assert "| m | 3 | 0.67" in "\n".join(format_table(summary, {}))
    assert not format_valid("<think>Park.</think><memory>Seen: nothing.</memory>speed(2x)")


def test_a_policys_episodes_are_kept_and_reused_only_under_the_same_settings(
    tmp_path: Path,
) -> None:
    samples = split_samples("calib", 1, limit=2)
    played: list[int] = []

    def play(batch: Sequence[VideoQA]) -> list[dict[str, object]]:
        played.append(len(batch))
        return [{"model": "p/x", "sample_id": s.id, "accuracy": 1.0} for s in batch]

    settings = {"split": "calib", "rules": "pixel-vlm"}
    first = policy_rows(tmp_path, "p/x", samples, play, settings, log=lambda _: None)
    again = policy_rows(tmp_path, "p/x", samples, play, settings, log=lambda _: None)
    assert first[1] is False and again == (first[0], True) and played == [2], "rows kept"
    policy_rows(tmp_path, "p/x", samples, play, {**settings, "rules": "paper"}, log=print)
    policy_rows(tmp_path, "p/x", samples[:1], play, {**settings, "rules": "paper"}, log=print)
    assert played == [2, 2, 1], "other settings or questions play again"
    assert [p.name for p in (tmp_path / "policies").iterdir()] == ["p_x.json"]


@pytest.mark.slow
def test_fixed_schedules_read_the_pixel_vlms_sensor_and_have_no_format_column() -> None:
    samples = split_samples("calib", 1, limit=1)
    rows = run_baseline("pacing-4x", samples, log=lambda _: None)
    (row,) = rows
    assert row["error"] is None and row["ended_by"] == "answer"
    assert row["format_valid"] is None and row["frames"] > 0 and row["turns"] >= 1
    summary = summarise(rows)
    assert summary["pacing-4x"]["format_valid"] is None
    (line,) = [x for x in format_table(summary, {}) if x.startswith("| pacing-4x")]
    assert line.rstrip(" |").endswith("—")
    assert not math.isnan(summary["pacing-4x"]["accuracy"][0])


@pytest.mark.slow
def test_the_shipped_dapo_checkpoint_answers_validation_mcqs_in_one_valid_turn() -> None:
    """Free and greedy, as measured in docs/training.md (the SFT start breaks on both)."""
    from experiments.videoscout_pixel.videoscout_pixel import run_model
    from policies.checkpoints import VIDEOSCOUT_DAPO_DIR
    from policies.videoscout.record import trained_layout

    mcqs = [s for s in split_samples("calib", 1, limit=4) if s.id.endswith("/mcq")]
    layout = trained_layout(str(VIDEOSCOUT_DAPO_DIR))
    rows = run_model(str(VIDEOSCOUT_DAPO_DIR), mcqs, layout=layout, log=lambda _: None)
    assert len(rows) == 2
    for row in rows:
        assert row["error"] is None and row["ended_by"] == "answer"
        assert row["turns"] == 1 and row["format_valid"] == 1.0 and row["frames"] > 0


def test_paired_differences_pair_questions_and_skip_undefined_columns() -> None:
    from experiments.videoscout_pixel.videoscout_pixel import format_paired, paired_differences

    def row(model: str, sample: str, reward: float, valid: float | None) -> dict[str, object]:
        cells: dict[str, object] = dict.fromkeys(COLUMNS, 0.0)
        cells.update(reward=reward, format_valid=valid)
        return {"model": model, "sample_id": sample, "video": sample[0], **cells}

    rows = [row("a", s, 0.0, 0.5) for s in ("v1", "v2", "w1", "w2")]
    rows += [row("b", s, 1.0, 0.5) for s in ("v1", "v2", "w1")]  # w2 not played by b
    rows += [row("c", s, 0.0, None) for s in ("v1", "w1")]
    diffs = paired_differences(rows, "a", "b")
    assert diffs["reward"] == [1.0, 1.0, 1.0] and diffs["format_valid"][0] == 0.0
    assert "format_valid" not in paired_differences(rows, "a", "c"), "c writes no replies"
    assert format_paired(diffs, "a", "b").startswith("Paired, b − a")
    assert "reward +1.00 (+1.00 to +1.00)" in format_paired(diffs, "a", "b")
    with pytest.raises(ValueError, match="share no question"):
        paired_differences([row("a", "v1", 0, 0), row("d", "x1", 0, 0)], "a", "d")


def test_a_policys_profile_says_how_its_episodes_ended_and_when_its_replies_broke() -> None:
    from experiments.videoscout_pixel.videoscout_pixel import format_profile

    good = "<think>Beach.</think><memory>Seen: beach.</memory><action>speed(1x)</action>"
    answer = '<think>End.</think><memory>Seen: beach.</memory><action>answer("B")</action>'
    backwards = '<memory>Seen: beach.</memory><action>answer("C", [271, 29])</action>'
    rows = [
        {"model": "m", "sample_id": "v0/n1/mcq", "accuracy": 0.0, "ended_by": "invalid_actions",
         "replies": [good, good, backwards]},
        {"model": "m", "sample_id": "v0/n1/open", "accuracy": 1.0, "ended_by": "answer",
         "replies": [good, answer]},
        {"model": "other", "sample_id": "v0/n1/mcq", "accuracy": 1.0, "ended_by": "answer",
         "replies": ["C"]},
    ]  # fmt: skip
    line = format_profile(rows, "m", "+ SFT")
    assert line.startswith("+ SFT: episodes ended by invalid_actions 1, answer 1;")
    assert "(1: 1.00, 2: 1.00, 3: 0.00) and by question form (mcq 0.67, open 1.00)" in line
    assert "right answers by question form (mcq 0/1, open 1/1)" in line
    assert "actions written (answer 2, speed(1x) 3)" in line
    assert "replies after a malformed one 0, valid 0;" in line  # the slip was the last reply
    assert "answer windows in order 0, reversed 1;" in line
    assert line.endswith("open-question answer calls: letter 1, word 0, neither 0.")
    rows[1]["replies"] = [answer.replace('"B"', '"violin"'), answer.replace('"B")', '"vi, [2')]
    line = format_profile(rows, "m", "+ SFT")
    assert line.endswith("open-question answer calls: letter 0, word 1, neither 1.")
    rows[0]["replies"] = [backwards, backwards, good]
    assert "replies after a malformed one 2, valid 1;" in format_profile(rows, "m", "+ SFT")


def test_a_checkpoints_cache_key_names_its_prompt_only_where_it_differs() -> None:
    from experiments.videoscout_pixel.videoscout_pixel import model_settings
    from policies.videoscout.prompt import PromptLayout

    base = {"split": "calib", "videos": 4}
    key = model_settings
    assert key(base, PromptLayout(), False) == base  # keys of earlier blocks stay valid
    assert key(base, PromptLayout("off"), False) == {**base, "plain_prompt": True}
    last = {**base, "end_note": "last", "guided": True}
    assert key(base, PromptLayout("last"), True) == last
    assert key(base, PromptLayout(question_first=True), False) == {**base, "question_first": True}
    from policies.videoscout.think_act_pattern import pattern_id

    assert key(base, PromptLayout(), False, True) == {**base, "format_guided": pattern_id()}
    assert pattern_id() != pattern_id(80), "the pattern's form is in the key"
    from experiments.videoscout_pixel.videoscout_pixel import decoding

    assert decoding("runs/a", True, False) == ("runs/a", True, False)
    assert decoding("runs/a+format-guided", True, False) == ("runs/a", False, True)
    assert decoding("runs/a", True, True) == ("runs/a", False, True)
    assert base == {"split": "calib", "videos": 4}


def test_the_study_tells_answers_given_with_the_evidence_on_screen_from_the_rest() -> None:
    from experiments.videoscout_pixel.videoscout_pixel import (
        evidence_sighting,
        format_profile,
        format_sighting,
    )
    from video_env.types import Interval, VideoQA

    sample = VideoQA(id="v0/n1/mcq", video="v.mp4", question="Which?", answer="A",
                     options=("x", "y"), gt_intervals=(Interval(100.0, 110.0),))  # fmt: skip
    early = {"ended_by": "answer", "explored": [[0.0, 30.0, "speed"], [30.0, 60.0, "speed"]]}
    late = {"ended_by": "answer", "explored": [[90.0, 105.0, "speed"], [105.0, 150.0, "speed"]]}
    on_screen = {"ended_by": "answer", "explored": [[60.0, 90.0, "speed"], [95.0, 120.0, "speed"]]}
    lost = {"ended_by": "invalid_actions", "explored": [[95.0, 120.0, "speed"]]}
    touching = {"ended_by": "answer", "explored": [[60.0, 100.0, "speed"]]}
    assert evidence_sighting(sample, touching)["answered_in_view"] is False
    assert evidence_sighting(sample, early) == {"evidence_shown": False, "answered_in_view": False}
    assert evidence_sighting(sample, late) == {"evidence_shown": True, "answered_in_view": True}
    assert evidence_sighting(sample, on_screen)["answered_in_view"] is True
    assert evidence_sighting(sample, lost) == {"evidence_shown": True, "answered_in_view": None}
    rows = [
        {"accuracy": 1.0, **evidence_sighting(sample, on_screen)},
        {"accuracy": 1.0, **evidence_sighting(sample, early)},
        {"accuracy": 0.0, **evidence_sighting(sample, early)},
        {"accuracy": 0.0, **evidence_sighting(sample, lost)},
    ]
    assert format_sighting(rows) == (
        "answers with the evidence on screen 1 (right 1), elsewhere 2 (right 1); "
        "episodes that showed the evidence at all 2 of 4"
    )
    assert format_sighting([{"accuracy": 1.0}]) == ""  # rows played before the record
    bare = VideoQA(id="v0/n2/open", video="v.mp4", question="What?", answer="cup")
    assert evidence_sighting(bare, early) == {"evidence_shown": None, "answered_in_view": None}
    profile = format_profile([{"model": "m", "sample_id": "v0/n1/mcq", "ended_by": "answer",
                               "replies": [], **rows[0]}], "m", "m")  # fmt: skip
    assert profile.endswith("reversed 0; answers with the evidence on screen 1 (right 1), "
                            "elsewhere 0 (right 0); episodes that showed the evidence at all "
                            "1 of 1.")  # fmt: skip


def test_a_tool_calling_checkpoints_profile_counts_its_calls() -> None:
    from experiments.videoscout_pixel.videoscout_pixel import format_tool_profile, tool_episode_row

    def call(name: str, **arguments: object) -> dict[str, object]:
        return {"type": "function", "function": {"name": name, "arguments": arguments}}

    sample = split_samples("calib", 1, limit=1)[0]
    answer = call("answer", answer="B", start=1, end=5)
    record = {"correct": True, "reward": 1.1, "ended_by": "answer", "turns": 5, "frames_shown": 9}
    replies = [
        {"role": "assistant", "content": "Far.", "tool_calls": [call("speed", factor=4)]},
        {"role": "assistant", "content": "Hm."},  # no call
        {"role": "assistant", "content": "", "tool_calls": [call("answer", answer="B",
                                                                   start=271.0, end=29.0)]},
        {"role": "assistant", "content": "", "tool_calls": [call("answer", answer="B",
                                                                   start="soon", end=5)]},
        {"role": "assistant", "content": "", "tool_calls": [answer]},
    ]  # fmt: skip
    row = tool_episode_row("t", sample, record, replies)
    # a reversed window or a word for a time is no Pacing action: not well-formed
    assert row["format_valid"] == pytest.approx(2 / 5) and row["accuracy"] == 1.0
    assert row["tool_replies"][1] == {"content": "Hm.", "tool_calls": None}
    line = format_tool_profile([row], "t", "+ SFT (tool chats)")
    assert line.startswith("+ SFT (tool chats): episodes ended by answer 1;")
    assert "well-formed tool calls by turn (1: 1.00, 2: 0.00, 3: 0.00, 4: 0.00, 5: 1.00)" in line
    assert "tools called (answer 3, none 1, speed(4x) 1)" in line
    assert "answer windows in order 1, reversed 1" in line  # "soon" gives no window


def test_the_study_plays_a_tool_calling_checkpoint_in_trls_chat(tmp_path: Path) -> None:
    """A tiny random checkpoint with TRL's tool template goes through the tool policy."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("trl")
    from experiments.videoscout_pixel.videoscout_pixel import build_parser, play
    from policies.training.sft import with_context
    from policies.training.trl_env import tool_chat_processor
    from video_env.backends.testing import tiny_qwen2_5_vl
    from video_env.errors import ConfigError

    folder = tiny_qwen2_5_vl(tmp_path / "tiny", init_range=0.02)
    tool_chat_processor(transformers.AutoProcessor.from_pretrained(folder)).save_pretrained(folder)
    config = transformers.AutoConfig.from_pretrained(folder)
    with_context(config, 16384)  # a first window as images takes about 6,700 positions
    config.save_pretrained(folder)
    one = ["--split", "calib", "--videos", "1", "--limit", "1"]
    budget = ["--max-turns", "2", "--max-new-tokens", "4", "--out", str(tmp_path)]
    args = build_parser().parse_args(["--models", str(folder), *one, *budget])
    _, rows, kept = play(args, log=lambda _: None)
    (row,) = rows
    assert kept == 0 and "tool_replies" in row and "replies" not in row
    assert row["error"] is None and len(row["tool_replies"]) == 2  # --max-turns
    assert row["ended_by"] == "max_steps"  # two invalid turns, within the error allowance
    assert row["format_valid"] == 0.0  # 4 random tokens make no tool call
    guided = ["--models", str(folder), "--guided", *one, "--out", str(tmp_path / "guided")]
    with pytest.raises(ConfigError, match="tool calls"):
        play(build_parser().parse_args(guided), log=lambda _: None)
