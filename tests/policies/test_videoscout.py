"""The VideoScout policy: its input each turn, and its Think-Act replies under the env's rules.

``ScriptedChat`` is a test double of the ``VisionChat`` protocol: it returns canned
replies and keeps the messages it was given. It is not a model.
"""

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import policies
from benchmarks.records import EpisodeLog
from policies import run_episode
from policies.checkpoints import VIDEOSCOUT_DAPO_DIR, VIDEOSCOUT_SFT_DIR
from policies.videoscout import VideoScoutPolicy
from policies.videoscout import policy as videoscout
from policies.videoscout import record as rules_record
from video_env.backends.base import FrameBatch, VisionChat, VisionMessage
from video_env.backends.llm.base import Completion
from video_env.cli import main
from video_env.envs import PacingEnv
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost
from video_env.pixel import PIXEL_VLM_DIR, is_pixel_vlm
from video_env.video.resize import Resize

WELL_FORMED = "<think>Nothing yet.</think><memory>{memory}</memory><action>{action}</action>"


class ScriptedChat:
    """Returns the given replies in order (then a well-formed answer "A"), recording calls."""

    name = "scripted"
    simulated = True

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.usage = Cost()
        self.calls: list[list[VisionMessage]] = []

    def chat(
        self, messages: Sequence[VisionMessage], *, max_new_tokens: int = 512,
        temperature: float = 0.0,
    ) -> Completion:  # fmt: skip
        self.calls.append(list(messages))
        done = WELL_FORMED.format(memory="done", action='answer("A")')
        text = self.replies.pop(0) if self.replies else done
        return Completion(text=text, model="scripted", prompt_tokens=100, completion_tokens=20)


def episode(replies: Sequence[str], strict: bool = False) -> tuple[dict[str, Any], ScriptedChat]:
    chat = ScriptedChat(replies)
    policy = VideoScoutPolicy(chat, strict=strict)
    env = PacingEnv("synth-tiny", **policy.env_kwargs["pacing"])
    return run_episode(env, policy, seed=0, options={"index": 0}), chat


def steps(record: dict[str, Any]) -> list[dict[str, Any]]:
    return list(record["trajectory"])


def test_the_scripted_double_is_a_vision_chat() -> None:
    assert isinstance(ScriptedChat([]), VisionChat)
    with pytest.raises(ConfigError, match="VisionChat"):
        VideoScoutPolicy(object())  # type: ignore[arg-type]


def test_each_turn_shows_the_envs_frames_memory_and_question() -> None:
    replies = [
        WELL_FORMED.format(memory="a kitchen", action="speed(4x)"),
        WELL_FORMED.format(memory="a street at 40 s", action="rewatch(3)"),
        WELL_FORMED.format(memory="sign reads MAPLE", action='answer("A", [30, 45])'),
    ]
    chat = ScriptedChat(replies)
    policy = VideoScoutPolicy(chat)
    env = PacingEnv("synth-tiny", **policy.env_kwargs["pacing"])
    obs, info = env.reset(seed=0, options={"index": 0})
    shapes = []
    for _ in replies:
        action = policy.act(obs, info)
        system, user = chat.calls[-1]
        assert system["role"] == "system" and "<think>" in str(system["content"])
        assert "rewatch(k)" in str(system["content"]) and "200 words" in str(system["content"])
        before, batch, after = user["content"]
        assert isinstance(batch, FrameBatch)
        n = int(obs["n_frames"])
        res = batch.size.width
        assert np.array_equal(batch.pixels(), obs["frames"][:n, :res, :res])  # the env's pixels
        assert np.allclose(batch.times, obs["timestamps"][:n])
        assert str(obs["question"]) in str(after) and f"memory: {obs['memory'] or '(empty)'}" in (
            str(after)
        )
        shapes.append((n, res))
        obs, _, terminated, _, info = env.step(action)
    assert shapes == [(20, 448), (12, 316), (20, 448)]  # 1x, then 4x, then a rewatch
    assert terminated
    assert info["episode"]["reward_parts"]["fmt"] == pytest.approx(0.3)
    assert obs["memory"] == "sign reads MAPLE"
    # the reader over the observation answers any time with the nearest shown frame
    frame = batch.video.frames([float(batch.times[1]) + 0.01], size=Resize.exact(32, 32))
    assert frame.shape == (1, 32, 32, 3)


def test_the_turn_that_ends_the_video_says_only_answer_is_left_where_asked() -> None:
    from policies.videoscout import END_NOTE
    from policies.videoscout.prompt import END_NOTE_PLACES

    speeds = [WELL_FORMED.format(memory="m", action="speed(4x)")] * 12
    for place in END_NOTE_PLACES:
        chat = ScriptedChat(speeds)
        policy = VideoScoutPolicy(chat, end_note=place)
        env = PacingEnv("synth-tiny", **policy.env_kwargs["pacing"])
        obs, info = env.reset(seed=0, options={"index": 0})
        legal = []
        while True:
            action = policy.act(obs, info)
            legal.append(info["legal_actions"])
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        contents = [call[1]["content"] for call in chat.calls]
        ends = [kinds == ["answer"] for kinds in legal]
        assert any(ends) and not all(ends)
        in_window = [END_NOTE in str(c[0]) for c in contents]
        last_line = [str(c[-1]).rstrip("\n").endswith(END_NOTE) for c in contents]
        assert in_window == (ends if place == "window" else [False] * len(ends))
        assert last_line == (ends if place == "last" else [False] * len(ends))
        assert sum(END_NOTE in str(part) for c in contents for part in c) == (
            0 if place == "off" else sum(ends)
        )


def test_question_first_puts_the_question_and_options_before_the_frames() -> None:
    from policies.videoscout import END_NOTE

    for first in (False, True):
        chat = ScriptedChat([WELL_FORMED.format(memory="a kitchen", action="speed(4x)")])
        policy = VideoScoutPolicy(chat, question_first=first, end_note="last")
        env = PacingEnv("synth-tiny", **policy.env_kwargs["pacing"])
        obs, info = env.reset(seed=0, options={"index": 0})
        obs, *_ = env.step(policy.act(obs, info))
        policy.act(obs, info)
        before, batch, after = chat.calls[-1][1]["content"]
        assert isinstance(batch, FrameBatch)
        text_before, text_after = str(before), str(after)
        question, options = str(obs["question"]), str(obs["options"]).splitlines()
        assert options, "an MCQ: its options travel with the question"
        assert "Now at 4x: chunks" in text_before  # the window line opens the turn either way
        asked = text_before if first else text_after
        assert f"Question: {question}\n" in asked and all(o in asked for o in options)
        assert "Answer with the letter of the right option." in asked
        assert ("Question:" in text_after) != first  # the question is in one place only
        assert text_after.startswith("Your memory: a kitchen\n")  # the notes after the frames
        assert (text_after == "Your memory: a kitchen\n") == first
        assert "Your memory" not in text_before
        assert END_NOTE not in text_before + text_after  # not the last window
        assert policy.name.endswith("+question-first") == first  # labelled in result tables


def test_an_unknown_end_note_place_is_refused() -> None:
    with pytest.raises(ConfigError, match="end_note"):
        VideoScoutPolicy(ScriptedChat([]), end_note="top")


def test_well_formed_reply_updates_memory_and_moves_on() -> None:
    record, chat = episode([WELL_FORMED.format(memory="saw a kitchen", action="speed(2x)")])
    first = steps(record)[0]
    assert first["error"] == ""
    assert "speed" in str(first["action"]) and "2" in str(first["action"])
    assert "saw a kitchen" in str(chat.calls[1][1]["content"][2])  # the memory comes back
    assert record["reward_parts"]["fmt"] == pytest.approx(0.3)
    assert record["llm_calls"] == 2 and record["prompt_tokens"] == 200


def test_missing_tags_follow_the_action_sets_rules() -> None:
    record, chat = episode(["<think>hmm</think> speed(2x)"])
    first = steps(record)[0]
    assert first["error"] == ""  # lenient: the action is read without the tags
    assert "speed" in str(first["action"])
    assert "memory: (empty)" in str(chat.calls[1][1]["content"][2])  # no memory tag: unchanged


def test_extra_text_around_the_tags() -> None:
    reply = "Sure! " + WELL_FORMED.format(memory="m", action="speed(4x)") + " Hope it helps."
    record, _ = episode([reply])
    assert steps(record)[0]["error"] == ""
    assert "speed" in str(steps(record)[0]["action"])
    strict, _ = episode([reply], strict=True)
    assert steps(strict)[0]["error"] != ""
    assert strict["invalid_actions"] >= 1 and strict["reward_parts"]["fmt"] == 0.0


def test_two_actions() -> None:
    reply = WELL_FORMED.format(memory="m", action="speed(4x) speed(1x)")
    strict, _ = episode([reply], strict=True)
    assert "one action" in steps(strict)[0]["error"]
    assert steps(strict)[0]["reward"] < 0 and strict["reward_parts"]["fmt"] == 0.0
    lenient, _ = episode([reply])
    assert steps(lenient)[0]["error"] == ""  # one of them is taken: one turn, not two
    assert len(steps(lenient)) == 2 and lenient["turns"] == 2


def test_memory_over_the_word_budget_is_cut() -> None:
    long_memory = " ".join(f"w{i}" for i in range(250))
    chat = ScriptedChat([WELL_FORMED.format(memory=long_memory, action="speed(1x)")])
    policy = VideoScoutPolicy(chat)
    env = PacingEnv("synth-tiny", **policy.env_kwargs["pacing"])
    obs, info = env.reset(seed=0, options={"index": 0})
    obs, _, _, _, info = env.step(policy.act(obs, info))
    assert info["memory_truncated"] and info["last_action_error"] == ""
    assert obs["memory"].split() == long_memory.split()[:200]


def test_unknown_actions_spend_the_error_allowance() -> None:
    bad = WELL_FORMED.format(memory="m", action="fly(3)")
    record, chat = episode([bad, WELL_FORMED.format(memory="m", action='answer("B")')])
    first = steps(record)[0]
    assert first["error"] and first["reward"] == pytest.approx(-0.1)
    assert "invalid" in str(chat.calls[1][1]["content"][2])  # the error is shown to the model
    assert record["ended_by"] == "answer" and record["reward_parts"]["fmt"] == 0.0
    record, _ = episode([bad] * 10)
    assert record["ended_by"] == "invalid_actions" and record["invalid_actions"] == 4
    assert record["answer"] is None


def test_registry_resolves_a_vlm_spec_lazily() -> None:
    with pytest.raises(ConfigError, match="model spec"):
        policies.make("videoscout:qwen2.5-vl")
    with pytest.raises(ConfigError, match="unknown VLM spec"):
        policies.make("videoscout:nope:x")


def test_a_checkpoint_runs_under_the_pacing_rules_it_was_trained_under(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from policies.training.cli import RULES

    # the shipped pixel VLM records the 16:9 frames it was trained on (train vlm writes it)
    assert rules_record.trained_rules(PIXEL_VLM_DIR) == RULES["pixel-vlm"]()
    monkeypatch.setattr(videoscout, "resolve_vision_chat", lambda spec: ScriptedChat([]))
    untrained = policies.make(f"videoscout:qwen2.5-vl:{tmp_path}")
    assert "rules" not in untrained.env_kwargs["pacing"]  # the paper's, the env's default
    rules_record.save_trained_rules(tmp_path, RULES["pixel-vlm"]())
    trained = policies.make(f"videoscout:qwen2.5-vl:{tmp_path}")
    assert trained.env_kwargs["pacing"]["rules"] == RULES["pixel-vlm"]()
    env = PacingEnv("synth-tiny", **trained.env_kwargs["pacing"])
    obs, _ = env.reset(seed=0, options={"index": 0})
    assert obs["frames"].shape[1:3] == (280, 504)  # the 16:9 frames it learned on
    given = videoscout.make_videoscout(f"qwen2.5-vl:{tmp_path}", rules=RULES["paper"]())
    assert given.env_kwargs["pacing"]["rules"] == RULES["paper"]()  # an explicit choice wins
    (tmp_path / rules_record.RULES_FILE).write_text('{"rules": {"speed": 3}}')
    with pytest.raises(ConfigError, match="unknown keys"):
        policies.make(f"videoscout:qwen2.5-vl:{tmp_path}")
    # a trainer's checkpoint-N folder runs under its run's rules
    (tmp_path / "run" / "checkpoint-10").mkdir(parents=True)
    rules_record.save_trained_rules(tmp_path / "run", RULES["pixel-vlm"]())
    assert rules_record.trained_rules(tmp_path / "run" / "checkpoint-10") == RULES["pixel-vlm"]()
    assert rules_record.trained_rules(tmp_path / "nothing") is None
    # only a local model's folder is looked at: an API model keeps the paper's rules
    api = policies.make("videoscout:openai:run")
    assert "rules" not in api.env_kwargs["pacing"]


def test_a_checkpoint_runs_with_the_end_note_it_was_trained_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from policies.training.cli import RULES

    monkeypatch.setattr(videoscout, "resolve_vision_chat", lambda spec: ScriptedChat([]))
    rules_record.save_trained_rules(tmp_path, RULES["pixel-vlm"]())
    assert rules_record.trained_end_note(tmp_path) is None  # a record from before the setting
    assert policies.make(f"videoscout:qwen2.5-vl:{tmp_path}").end_note == "window"
    rules_record.save_trained_rules(tmp_path, RULES["pixel-vlm"](), end_note="last")
    assert rules_record.trained_rules(tmp_path) == RULES["pixel-vlm"]()
    assert policies.make(f"videoscout:qwen2.5-vl:{tmp_path}").end_note == "last"
    given = videoscout.make_videoscout(f"qwen2.5-vl:{tmp_path}", end_note="off")
    assert given.end_note == "off"  # an explicit choice wins
    (tmp_path / "run" / "checkpoint-4").mkdir(parents=True)
    rules_record.save_trained_rules(tmp_path / "run", RULES["paper"](), end_note="off")
    assert rules_record.trained_end_note(tmp_path / "run" / "checkpoint-4") == "off"
    for bad in ("1", '"top"'):
        (tmp_path / rules_record.RULES_FILE).write_text(f'{{"rules": {{}}, "end_note": {bad}}}')
        with pytest.raises(ConfigError, match="end_note"):
            rules_record.trained_end_note(tmp_path)


def test_a_checkpoint_runs_with_the_question_where_it_was_trained_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from policies.training.cli import RULES

    monkeypatch.setattr(videoscout, "resolve_vision_chat", lambda spec: ScriptedChat([]))
    rules_record.save_trained_rules(tmp_path, RULES["pixel-vlm"](), end_note="last")
    assert rules_record.trained_question_first(tmp_path) is None  # from before the setting
    assert not policies.make(f"videoscout:qwen2.5-vl:{tmp_path}").question_first
    rules_record.save_trained_rules(tmp_path, RULES["pixel-vlm"](), question_first=True)
    assert rules_record.trained_question_first(tmp_path) is True
    assert policies.make(f"videoscout:qwen2.5-vl:{tmp_path}").question_first
    given = videoscout.make_videoscout(f"qwen2.5-vl:{tmp_path}", question_first=False)
    assert not given.question_first  # an explicit choice wins
    (tmp_path / rules_record.RULES_FILE).write_text('{"rules": {}, "question_first": "yes"}')
    with pytest.raises(ConfigError, match="question_first"):
        rules_record.trained_question_first(tmp_path)


def asked_models(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The model specs VideoScout's registry entry resolves, each answered by a scripted chat."""
    asked: list[str] = []
    monkeypatch.setattr(
        videoscout, "resolve_vision_chat", lambda spec: asked.append(spec) or ScriptedChat([])
    )
    return asked


def test_settings_ride_on_the_name_and_the_shipped_checkpoint_runs_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = asked_models(monkeypatch)
    shipped = policies.make("videoscout:pixel?max_new_tokens=96&temperature=0.5")
    assert asked == [f"qwen2.5-vl:{VIDEOSCOUT_SFT_DIR}"]
    assert (shipped.max_new_tokens, shipped.temperature) == (96, 0.5)
    # the settings stay in the name: two setting sets never share a table row
    assert shipped.name.endswith("?max_new_tokens=96&temperature=0.5")
    assert shipped.name.startswith("videoscout:pixel")
    assert policies.make("videoscout:pixel").name == shipped.name.partition("?")[0]
    # the shipped folder is a pixel VLM with its SFT's record, run as it was trained
    assert is_pixel_vlm(VIDEOSCOUT_SFT_DIR) and (VIDEOSCOUT_SFT_DIR / "sft.json").is_file()
    assert shipped.env_kwargs["pacing"]["rules"] == rules_record.trained_rules(VIDEOSCOUT_SFT_DIR)
    assert shipped.question_first == rules_record.trained_question_first(VIDEOSCOUT_SFT_DIR)
    assert policies.make("videoscout:pixel?max_new_tokens=96").temperature == 0.0
    with pytest.raises(ConfigError, match="nope"):
        policies.make("videoscout:pixel?nope=1")
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        policies.make("videoscout:pixel?guided")
    with pytest.raises(ConfigError, match="name"):
        policies.make("videoscout:pixel?name=mine")


def test_the_dapo_checkpoint_ships_by_name_with_its_runs_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = asked_models(monkeypatch)
    dapo = policies.make("videoscout:pixel-dapo?max_new_tokens=128")
    assert asked == [f"qwen2.5-vl:{VIDEOSCOUT_DAPO_DIR}"]
    assert dapo.name.startswith("videoscout:pixel-dapo")
    assert dapo.name.endswith("?max_new_tokens=128")
    assert is_pixel_vlm(VIDEOSCOUT_DAPO_DIR)
    # trained from the shipped SFT, under its rules and prompt layout, and recorded
    record = json.loads((VIDEOSCOUT_DAPO_DIR / "rl.json").read_text())
    # (recorded where the SFT checkpoint lay then, before it moved to policies/checkpoints/)
    assert Path(record["base"]).parts[-3:] == ("video_env", "pixel", "videoscout_weights")
    assert record["seed"] == 0 and record["machine"]["cpus"]
    assert record["command"].startswith("video-env train rl ")
    steps = (VIDEOSCOUT_DAPO_DIR / "log.jsonl").read_text().splitlines()
    assert record["steps_done"] == len(steps) == 35
    assert rules_record.trained_rules(VIDEOSCOUT_DAPO_DIR) == rules_record.trained_rules(
        VIDEOSCOUT_SFT_DIR
    )
    assert dapo.env_kwargs["pacing"]["rules"] == rules_record.trained_rules(VIDEOSCOUT_SFT_DIR)
    assert dapo.question_first == policies.make("videoscout:pixel").question_first
    # its own weights, not the SFT's
    weights = "model.safetensors"
    sft, learned = ((d / weights).read_bytes() for d in (VIDEOSCOUT_SFT_DIR, VIDEOSCOUT_DAPO_DIR))
    assert len(sft) == len(learned) and sft != learned


def test_every_shipped_checkpoint_is_package_data_and_a_missing_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    (package_data,) = [line for line in pyproject.splitlines() if line.startswith("policies = [")]
    assert '"checkpoints/*/*"' in package_data
    for folder in videoscout.SHIPPED.values():
        assert is_pixel_vlm(folder) and rules_record.trained_rules(folder) is not None
        assert folder.parent == Path(policies.__file__).parent / "checkpoints"
    with pytest.raises(ConfigError, match="videoscout:pixel-dapo"):
        policies.make("videoscout:pixel_dapo")  # a typo: the shipped names are listed
    monkeypatch.setattr(videoscout, "SHIPPED", {"pixel": tmp_path / "gone"})
    with pytest.raises(ConfigError, match="shipped checkpoint is missing"):
        policies.make("videoscout:pixel")


def test_the_policys_model_labels_the_episode() -> None:
    """The env runs without sensors: what perceives is the policy's model, and its label."""
    record, _ = episode([])
    assert record["simulated"] and not record["pixel_vlm"]  # a scripted double

    class PixelChat(ScriptedChat):
        simulated = False
        pixel_vlm = True

    policy = VideoScoutPolicy(PixelChat([]))
    env = PacingEnv("synth-tiny", **policy.env_kwargs["pacing"])
    record = run_episode(env, policy, seed=0, options={"index": 0})
    assert record["pixel_vlm"] and not record["simulated"] and not record["random_weights"]
    assert record["frames"] == record["frames_shown"] > 0  # what its model read


def test_pacing_rules_survive_json() -> None:
    import json

    from policies.training.cli import RULES
    from video_env.envs.pacing_rules import PacingRules

    for preset in RULES.values():
        rules = preset()
        assert PacingRules.from_dict(json.loads(json.dumps(rules.to_dict()))) == rules
    malformed = [
        {"rewatch": {"frames": 20, "size": 3}},
        {"speeds": []},
        {"memory_words": "200"},
        {"rewatch": {"frames": 20.5, "resolution": 448, "chunks": 1}},
        {"rewatch": {"frames": 20, "resolution": "448", "chunks": 1}},
        {"chunk_table": [[None, "long"]]},
        {"format_reward": "high"},
    ]
    for data in malformed:
        with pytest.raises(ConfigError, match="malformed"):
            PacingRules.from_dict(data)


@pytest.mark.slow
def test_bench_runs_videoscout_with_a_tiny_random_qwen(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    pytest.importorskip("video_env.backends.transformers_vlm")
    try:  # the session-scoped checkpoint of the real-perception tests, when present
        model = request.getfixturevalue("tiny_qwen_dir")
    except pytest.FixtureLookupError:
        from video_env.backends.testing import tiny_qwen2_5_vl

        model = str(tiny_qwen2_5_vl(tmp_path / "qwen"))
    name = f"videoscout:qwen2.5-vl:{model}"
    args = ["bench", "--suite", "synth-tiny", "--envs", "pacing", "--limit", "1"]
    args += ["--policies", name, "--out", str(tmp_path / "bench"), "--workers", "1"]
    assert main([*args, "--quiet", "--no-plots"]) == 0
    (record,) = EpisodeLog(tmp_path / "bench").load()
    assert record["policy"] == name and record["error"] is None
    assert record["llm_calls"] >= 1 and record["prompt_tokens"] > 0
    assert record["ended_by"] in ("answer", "invalid_actions", "max_steps")
    assert record["random_weights"] and not record["simulated"]  # the policy's model's labels
