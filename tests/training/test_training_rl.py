"""DAPO with a tiny random Qwen2.5-VL: the pipeline end to end, and a toy task it learns.

The teacher is ``GroundTruthScriptedTeacher`` (reads the answer window; a teacher only).
"""

import json
from pathlib import Path
from typing import Any

import pytest

from policies.episode_settings import EpisodeSettings
from policies.training.cli import RULES
from video_env.synth.suites import load_suite

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("trl")

SMOKE = RULES["cpu-smoke"]()


def first_token_probs(model: Any, processor: Any, conversation: list[dict[str, Any]]) -> Any:
    """The model's distribution over the first token of its reply."""
    from policies.training.turn_inputs import TurnExample, collate_turns

    with torch.no_grad():
        batch = collate_turns(processor, [TurnExample(conversation, "")])
        batch.pop("labels")
        return model(**batch, logits_to_keep=2).logits[0, 0].softmax(-1)


def tiny_policy_chat(model_dir: str) -> tuple[Any, Any, Any]:
    """The tiny model's processor, the model, and a :class:`PolicyChat` sampling from it."""
    from policies.training.rollout import PolicyChat

    processor = transformers.AutoProcessor.from_pretrained(model_dir)
    model = transformers.AutoModelForImageTextToText.from_pretrained(model_dir)
    return processor, model, PolicyChat(model, processor)


def test_rollout_metrics_count_every_drawn_episode_and_turn() -> None:
    from policies.training.rl import rollout_metrics
    from policies.training.rollout import Trajectory
    from policies.training.turn_inputs import TurnExample

    def turn(reply: str) -> TurnExample:
        return TurnExample([], reply)

    valid = "<think>Park.</think><memory>Seen: nothing.</memory><action>speed(2x)</action>"
    answered = {"correct": True, "explored": [(0.0, 10.0, "speed"), (0.0, 5.0, "rewatch")]}
    episodes = [
        Trajectory([turn(valid), turn(valid)], 1.5, answered),
        Trajectory([turn("C"), turn(valid), turn("B")], 0.0, {"explored": [(0, 5, "speed")]}),
    ]
    metrics = rollout_metrics(episodes)
    assert metrics["drawn_reward"] == pytest.approx(0.75) and metrics["accuracy"] == 0.5
    assert metrics["format_valid"] == pytest.approx(3 / 5) and metrics["turns"] == 2.5
    assert metrics["rewatch_rate"] == pytest.approx(1 / 3)
    assert set(rollout_metrics([]).values()) == {0.0}


@pytest.mark.slow
def test_distill_then_sft_then_dapo_through_the_cli(tmp_path: Path) -> None:
    from video_env.backends.testing import tiny_qwen2_5_vl
    from video_env.cli import main
    from video_env.pixel import PIXEL_VLM_MARKER

    data, sft, rl = (str(tmp_path / name) for name in ("data", "sft", "rl"))
    common = ["--suite", "synth-tiny", "--limit", "1", "--rules", "cpu-smoke"]
    assert main(["train", "distill", "--teacher", "scripted-ground-truth", "--out", data,
                 "--end-note", "last", "--question-first", *common]) == 0  # fmt: skip
    run = json.loads((tmp_path / "data" / "distill.json").read_text())
    assert run["command"].startswith("video-env") and run["seconds"] >= 0  # how it was made
    base = tiny_qwen2_5_vl(tmp_path / "base", init_range=0.02)
    (base / PIXEL_VLM_MARKER).write_text(json.dumps({"recipe": {"seed": 7}}))  # a pixel VLM
    assert main(["train", "sft", "--model", str(base), "--data", f"{data}/turns.jsonl",
                 "--out", sft, "--lr", "3e-3", "--batch-size", "2", "--per-device-batch", "2",
                 "--max-steps", "4", "--quiet"]) == 0  # fmt: skip
    losses = json.loads((tmp_path / "sft" / "sft.json").read_text())["losses"]
    assert len(losses) == 4 and losses[-1] < losses[0]
    assert main(["train", "rl", "--model", sft, "--out", rl, "--trajectories",
                 f"{data}/trajectories.jsonl", "--steps", "1", "--group-size", "2",
                 "--groups-per-step", "1", "--max-draws-per-step", "2", "--max-turns", "2",
                 "--max-new-tokens", "6", "--freeze-vision", "--guided", *common]) == 0  # fmt: skip
    (step,) = [
        json.loads(line) for line in (tmp_path / "rl" / "log.jsonl").read_text().splitlines()
    ]
    assert step["step"] == 1 and step["groups"] + step["dropped"] == step["drawn"] >= 1
    assert 1 <= step["turns"] <= 2 and 0 <= step["format_valid"] <= 1
    assert any((tmp_path / "rl" / "tensorboard").glob("events.out.tfevents.*"))
    assert transformers.AutoModelForImageTextToText.from_pretrained(rl) is not None
    record = json.loads((tmp_path / "rl" / "rl.json").read_text())
    assert record["group_size"] == 2 and record["freeze_vision"] and record["seconds"] > 0
    assert record["episode"]["guided"]  # rollouts sampled with legal-action decoding
    # still the pixel VLM, with the whole chain of runs that made it
    marker = json.loads((tmp_path / "rl" / PIXEL_VLM_MARKER).read_text())
    assert marker["rl"]["base"] == sft and marker["continued_from"]["sft"]["base"] == str(base)
    assert marker["continued_from"]["continued_from"] == {"recipe": {"seed": 7}}
    # every stage keeps the rules its frames were shown under: bench loads it by name with them
    from policies.training.cli import RULES
    from policies.videoscout.record import trained_end_note, trained_question_first, trained_rules

    assert trained_rules(data) == trained_rules(sft) == trained_rules(rl) == RULES["cpu-smoke"]()
    # and the prompt it learned: rl's rollouts took the SFT start's end note
    assert trained_end_note(data) == trained_end_note(sft) == trained_end_note(rl) == "last"
    assert trained_question_first(data) is trained_question_first(sft) is True
    assert trained_question_first(rl) is True


def test_guided_rollouts_sample_only_the_guides_continuations(tiny_qwen_dir: str) -> None:
    from video_env.backends.base import ReplyGuide

    processor, model, chat = tiny_policy_chat(tiny_qwen_dir)
    heads = ("<action>speed(2x)</action>", "<action>speed(4x)</action>")
    guide = ReplyGuide("", closed=heads)
    messages = [{"role": "user", "content": "Where next?"}]
    replies = {chat.chat(messages, max_new_tokens=30, temperature=1.0, guide=guide).text
               for _ in range(4)}  # fmt: skip
    assert replies <= set(heads)


def test_format_guided_rollouts_write_every_reply_in_the_think_act_format(
    tiny_qwen_dir: str,
) -> None:
    from policies.training.rollout import PolicyChat, rollout_group
    from policies.videoscout.think_act_pattern import DEFAULT_MAX_CHARS, think_act_pattern
    from video_env.backends.base import ReplyGuide

    processor = transformers.AutoProcessor.from_pretrained(tiny_qwen_dir)
    model = transformers.AutoModelForImageTextToText.from_pretrained(tiny_qwen_dir)
    (sample,) = load_suite("synth-tiny", limit=1)
    group = rollout_group(
        PolicyChat(model, processor),
        sample,
        EpisodeSettings(
            rules=SMOKE, max_turns=2, max_new_tokens=24, format_guided=True, temperature=1.0
        ),
        group_size=2,
        seed=0,
    )
    replies = [turn.reply for trajectory in group for turn in trajectory.turns]
    calls = ["speed(1x)", "speed(2x)", "speed(4x)", *(f"rewatch({k})" for k in range(1, 64))]
    calls += [f'answer("{letter}")' for letter in "ABCDEFGH"]
    actions = [f"<action>{call}</action>" for call in calls]
    pattern = think_act_pattern(actions, open_answer=True, max_chars=DEFAULT_MAX_CHARS)
    any_turn = ReplyGuide("", patterns=(pattern,))
    assert replies
    for reply in replies:  # a random model's noise, cut at 24 tokens, kept to the format
        assert reply.startswith("<think>"[: len(reply)]) and any_turn.allows(reply), reply
    turns = [turn for trajectory in group for turn in trajectory.turns]
    assert all(turn.pattern and turn.pattern.startswith("(?:<think>") for turn in turns)


def test_guided_scoring_renormalises_over_the_tokens_the_pattern_allowed(
    tiny_qwen_dir: str,
) -> None:
    from policies.training.rl import reply_logprobs
    from video_env.backends.base import ReplyGuide

    processor, model, chat = tiny_policy_chat(tiny_qwen_dir)
    guide = ReplyGuide("", patterns=(r"<think>[a-z ]{0,6}</think><action>(?:go|stop)</action>",))
    messages = [{"role": "user", "content": "Where next?"}]
    whole = "<think>ab</think><action>go</action>"
    cut = "<think>ab"  # a reply cut by the token cap: its end-of-turn token is off the pattern
    for reply in (whole, cut):
        turn = chat.example(messages, reply, guide)
        free = reply_logprobs(model, processor, turn, 1.0)
        guided = reply_logprobs(model, processor, turn, 1.0, masked=True)
        assert torch.isfinite(guided).all() and guided.shape == free.shape
        assert (guided >= free - 1e-5).all(), "a subset's softmax gives each kept token more"
        assert (guided > free + 1e-3).any()
        assert guided.max() > -1e-5, "a forced token (one allowed) costs nothing"
        if reply == cut:
            assert torch.allclose(guided[-1], free[-1]), "past the refusal the row is free"
    unguided = chat.example(messages, whole)
    assert unguided.pattern is None
    assert torch.equal(reply_logprobs(model, processor, unguided, 1.0, masked=True),
                       reply_logprobs(model, processor, unguided, 1.0))  # fmt: skip


def two_frames_and_a_question() -> list[dict[str, Any]]:
    """A user message with a two-frame window of a synth video, then a question."""
    import numpy as np

    from video_env.backends.base import FrameBatch
    from video_env.video.base import Size

    (sample,) = load_suite("synth-tiny", limit=1)
    frames = FrameBatch(sample.video, np.array([1.0, 2.0]), Size(56, 28))
    return [{"role": "user", "content": [frames, "Where next?"]}]


def test_the_loss_scores_the_ids_a_rollout_sampled_at_their_sampled_probabilities(
    tiny_qwen_dir: str,
) -> None:
    from policies.training.episodes import EpisodeRun, RecordingChat
    from policies.training.rl import reply_logprobs, reply_tokens
    from policies.training.rollout import trajectory_from_run
    from policies.training.turn_inputs import END_OF_TURN, TurnExample, conversation_from_messages
    from video_env.backends.base import ReplyGuide
    from video_env.backends.hf_generation import generate

    processor, model, chat = tiny_policy_chat(tiny_qwen_dir)
    model.eval()
    torch.manual_seed(0)
    conversation = conversation_from_messages(two_frames_and_a_question())
    guide = ReplyGuide("", patterns=(r"<think>[a-z ]{0,4}</think><action>(?:go|stop)</action>",))
    pattern = guide.regex()
    rows = []
    for cap, sampled_under in ((12, None), (40, guide), (6, guide)):  # free, ended, cut
        batch, _ = generate(model, processor, torch, [conversation] * 2, max_new_tokens=cap,
                            temperature=1.0, device="cpu", guide=sampled_under)  # fmt: skip
        rows += [(row, sampled_under) for row in batch]
    tok = processor.tokenizer
    retokenized = [
        tok(r.text + END_OF_TURN, add_special_tokens=False)["input_ids"] for r, _ in rows
    ]
    # rows the old text path would score differently (a cut reply: no end token appended)
    assert any(ids != list(r.token_ids or ()) for (r, _), ids in zip(rows, retokenized,
                                                                     strict=True))  # fmt: skip
    assert {r.finish_reason for r, _ in rows} == {"stop", "length"}
    for row, sampled_under in rows:  # scored as sampled: under the guide's mask if guided
        masked = sampled_under is not None
        turn = TurnExample(conversation, row.text, pattern if masked else None, row.token_ids)
        assert row.token_ids and len(row.token_ids) == len(row.tokens) == reply_tokens(
            processor, turn
        )
        with torch.no_grad():
            scored = reply_logprobs(model, processor, turn, 1.0, masked=masked).exp()
        sampled = torch.tensor([t.chosen for t in row.tokens])
        assert torch.allclose(scored, sampled, atol=1e-4), (row.text, row.finish_reason)
    messages = [{"role": "user", "content": "Where next?"}]
    recording = RecordingChat(chat)
    replies = [recording.chat(messages, max_new_tokens=6, temperature=1.0) for _ in range(2)]
    turns = trajectory_from_run(chat, EpisodeRun({}, recording.turns)).turns
    assert [t.reply_ids for t in turns] == [r.token_ids for r in replies]
    assert all(r.token_ids and len(r.token_ids) == r.completion_tokens for r in replies)


def test_sampled_ids_and_text_collate_alike_where_the_tokenizer_splits_the_text_so(
    tiny_qwen_dir: str,
) -> None:
    from policies.training.turn_inputs import (
        END_OF_TURN,
        TurnExample,
        collate_turns,
        conversation_from_messages,
    )
    from video_env.errors import ConfigError

    processor = transformers.AutoProcessor.from_pretrained(tiny_qwen_dir)
    tok = processor.tokenizer
    framed = conversation_from_messages(two_frames_and_a_question())
    short = [{"role": "user", "content": [{"type": "text", "text": "Go?"}]}]
    reply = "<think>Park.</think><action>speed(2x)</action>"
    ids = tuple(tok(reply + END_OF_TURN, add_special_tokens=False)["input_ids"])
    as_text = collate_turns(processor, [TurnExample(short, "ok"), TurnExample(framed, reply)])
    as_ids = collate_turns(processor, [TurnExample(short, "ok"),
                                       TurnExample(framed, reply, reply_ids=ids)])  # fmt: skip
    assert "mm_token_type_ids" in as_text and int(as_text["mm_token_type_ids"].max()) > 0
    assert set(as_ids) == set(as_text)
    for key, value in as_text.items():
        assert torch.equal(as_ids[key], value), key
    split = (*tok("<think>Pa", add_special_tokens=False)["input_ids"],
             *tok("rk.</think>", add_special_tokens=False)["input_ids"])  # fmt: skip
    assert list(split) != tok("<think>Park.</think>", add_special_tokens=False)["input_ids"]
    odd = collate_turns(processor, [TurnExample(framed, "<think>Park.</think>", reply_ids=split),
                                    TurnExample(short, reply)])  # fmt: skip
    first, second = odd["labels"]
    assert first[first != -100].tolist() == list(split), "the sampled split, nothing appended"
    assert second[second != -100].tolist() == list(ids)
    length = int(odd["attention_mask"][0].sum())
    assert odd["input_ids"][0, length - len(split) : length].tolist() == list(split)
    assert odd["mm_token_type_ids"][0, length - len(split) :].eq(0).all()
    with pytest.raises(ConfigError, match="without tokens"):
        collate_turns(processor, [TurnExample(short, "", reply_ids=())])


@pytest.mark.slow
def test_the_rewarded_action_becomes_more_likely(tiny_qwen_dir: str) -> None:
    """One turn of the Pacing env; the reward is 1 when the reply is one chosen token."""
    from policies.training.dapo import DAPOSettings, fill_batch, group_is_informative
    from policies.training.rl import dapo_step
    from policies.training.rollout import PolicyChat, Trajectory
    from policies.videoscout import VideoScoutPolicy
    from video_env.envs import PacingEnv

    processor = transformers.AutoProcessor.from_pretrained(tiny_qwen_dir)
    model = transformers.AutoModelForImageTextToText.from_pretrained(tiny_qwen_dir)
    reference = transformers.AutoModelForImageTextToText.from_pretrained(tiny_qwen_dir).eval()
    chat = PolicyChat(model, processor)
    policy = VideoScoutPolicy(chat, rules=SMOKE)
    env = PacingEnv(load_suite("synth-tiny", limit=1), **policy.env_kwargs["pacing"])
    obs, _ = env.reset(seed=0)
    messages = policy.messages(obs)
    conversation = chat.example(messages, "").conversation
    tok = processor.tokenizer
    before = first_token_probs(model, processor, conversation)
    # the rewarded "action": a likely-enough token that is not already the favourite
    ranked = before.argsort(descending=True).tolist()[1:20]

    def round_trips(i: int) -> bool:
        return bool(tok(tok.decode([i]), add_special_tokens=False)["input_ids"] == [i])

    target = next(i for i in ranked if 0.05 < before[i] < 0.6 and round_trips(i))
    text = tok.decode([target])
    weights_before = [p.detach().clone() for p in model.parameters()]
    torch.manual_seed(0)

    def draw() -> list[Trajectory]:
        replies = [chat.chat(messages, max_new_tokens=1, temperature=1.0).text for _ in range(8)]
        return [Trajectory([chat.example(messages, r)], float(r == text), {}) for r in replies]

    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)  # plain steps along the gradient
    batch = fill_batch(
        draw, lambda g: group_is_informative([t.reward for t in g]), n_groups=1, max_draws=6
    )
    assert batch.groups, "the chosen token was never sampled"
    stats = dapo_step(model, reference, processor, optimizer, batch.groups, DAPOSettings())
    assert (
        torch.isfinite(torch.tensor(stats["loss"])) and stats["tokens"] == 16
    )  # 8 replies of one token + end
    changed = sum(
        not torch.equal(a, b) for a, b in zip(weights_before, model.parameters(), strict=True)
    )
    assert changed > 0
    after = first_token_probs(model, processor, conversation)
    assert after[target] > before[target] + 0.05


class _GradientRecorder(torch.optim.Optimizer):  # type: ignore[name-defined,misc]
    """An optimiser that keeps each step's gradients and leaves the weights as they are."""

    def __init__(self, params: Any) -> None:
        super().__init__(params, {})
        self.steps: list[list[Any]] = []

    def step(self, closure: Any = None) -> None:
        params = [p for g in self.param_groups for p in g["params"]]
        self.steps.append([None if p.grad is None else p.grad.clone() for p in params])


def test_one_pass_dapo_takes_the_behaviour_log_probs_from_its_own_pass(
    tiny_qwen_dir: str,
) -> None:
    """On-policy (one pass), the update equals the one with a separate behaviour pass."""
    from policies.training.dapo import DAPOSettings
    from policies.training.rl import dapo_step, reply_logprobs, reply_tokens
    from policies.training.rollout import Trajectory
    from policies.videoscout import VideoScoutPolicy
    from video_env.envs import PacingEnv

    processor, model, chat = tiny_policy_chat(tiny_qwen_dir)
    policy = VideoScoutPolicy(chat, rules=SMOKE)
    env = PacingEnv(load_suite("synth-tiny", limit=1), **policy.env_kwargs["pacing"])
    obs, _ = env.reset(seed=0)
    messages = policy.messages(obs)
    replies = ["<action>speed(2x)</action>", "<think>go</think><action>speed(1x)</action>"]
    group = [Trajectory([chat.example(messages, r)], float(i), {}) for i, r in enumerate(replies)]
    turn = group[1].turns[0]
    assert reply_tokens(processor, turn) == reply_logprobs(model, processor, turn, 1.0).numel()
    model.train()
    settings = DAPOSettings(beta=0.0)
    one, two = _GradientRecorder(model.parameters()), _GradientRecorder(model.parameters())
    first = dapo_step(model, None, processor, one, [group], settings, ppo_epochs=1)
    second = dapo_step(model, None, processor, two, [group], settings, ppo_epochs=2)
    assert first["tokens"] == second["tokens"] > 0
    assert first["loss"] == pytest.approx(second["loss"], abs=1e-6)
    pairs = [(a, b) for a, b in zip(one.steps[0], two.steps[-1], strict=True) if a is not None]
    assert pairs and any(float(a.abs().sum()) > 0 for a, _ in pairs)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in pairs)


def test_dapo_step_scores_policy_old_policy_and_reference_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import policies.training.dapo_step as rl  # the step's module: where it scores replies
    from policies.training.dapo import DAPOSettings
    from policies.training.rollout import Trajectory
    from policies.training.turn_encoding import TurnExample

    model, reference = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
    calls: list[tuple[str, bool]] = []

    def scored(m: Any, processor: Any, turn: Any, temperature: float, *, masked: bool) -> Any:
        calls.append(("policy" if m is model else "reference", masked))
        return m.weight.sum() + torch.full((3,), -1.0)

    monkeypatch.setattr(rl, "reply_logprobs", scored)
    turn = TurnExample([], "<think>t</think>", "<think>t</think>")
    group = [Trajectory([turn], 1.0, {}), Trajectory([turn], 0.0, {})]
    for score_guided in (False, True):
        calls.clear()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        rl.dapo_step(model, reference, None, optimizer, [group], DAPOSettings(), ppo_epochs=2,
                     score_guided=score_guided)  # fmt: skip
        # per trajectory: the old policy and the reference, then two passes of the policy
        assert sorted(calls) == sorted([("policy", score_guided)] * 6
                                       + [("reference", score_guided)] * 2)  # fmt: skip


def test_a_spent_time_budget_stops_the_run_which_is_still_saved_and_recorded(
    tiny_qwen_dir: str, tmp_path: Path
) -> None:
    from policies.training.rl import DAPOConfig, train_rl

    samples = load_suite("synth-tiny", limit=1)
    config = DAPOConfig(steps=5, group_size=2, max_seconds=0.0).with_episode(rules=SMOKE)
    lines: list[str] = []
    history = train_rl(tiny_qwen_dir, samples, tmp_path / "rl", config, log=lines.append)
    assert history == [] and "time budget" in lines[-1]
    record = json.loads((tmp_path / "rl" / "rl.json").read_text())
    assert record["steps_done"] == 0 and record["max_seconds"] == 0.0
    assert transformers.AutoModelForImageTextToText.from_pretrained(tmp_path / "rl") is not None


def test_a_resumed_run_takes_the_steps_the_uninterrupted_run_took(
    tiny_qwen_dir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil
    from dataclasses import replace

    import policies.training.rl as rl
    from policies.training.dapo import DAPOSettings
    from policies.training.rl import DAPOConfig, train_rl
    from policies.training.rl_state import STATE_FILE
    from video_env.errors import ConfigError

    def rollouts_with_rewards_that_differ(*args: Any, **kwargs: Any) -> list[Any]:
        """The rollouts, rewarded by their first reply's token ids (a random model never
        earns the env's reward, so its groups would all be dropped and nothing updated)."""
        group = real_rollout_group(*args, **kwargs)
        return [replace(t, reward=float(sum(t.turns[0].reply_ids or ()) % 3)) for t in group]

    real_rollout_group = rl.rollout_group
    monkeypatch.setattr(rl, "rollout_group", rollouts_with_rewards_that_differ)

    samples = load_suite("synth-tiny", limit=2)  # the question queue refills after the resume
    episode = EpisodeSettings(rules=SMOKE, max_turns=2, max_new_tokens=8, temperature=1.0)
    settings: dict[str, Any] = {
        "steps": 3, "group_size": 4, "groups_per_step": 1, "max_draws_per_step": 4,
        "learning_rate": 1e-2, "dynamic_filter": "equal-reward", "overlong": "none",
        "loss": DAPOSettings(beta=0.01), "seed": 3, "episode": episode,
    }  # fmt: skip

    def run(out: Path, **changes: Any) -> list[Any]:
        config = DAPOConfig(**{**settings, **changes})
        return train_rl(tiny_qwen_dir, samples, out, config, log=None)

    whole = run(tmp_path / "whole")
    parts = tmp_path / "parts"
    assert len(run(parts, steps=2, save_every=1)) == 2
    # killed during step 2's save: its state is gone, the log and checkpoint-1 are kept
    (parts / STATE_FILE).unlink()
    shutil.rmtree(parts / "checkpoint-2")
    with (parts / "log.jsonl").open("a") as f:
        f.write('{"step": 3, "gro')  # a line cut short by the kill
    with pytest.raises(ConfigError, match=r"not .*give its base"):
        train_rl(str(tmp_path / "whole"), samples, tmp_path / "parts",
                 DAPOConfig(**{**settings, "resume": True}), log=None)  # fmt: skip
    rest = run(tmp_path / "parts", resume=True)
    assert [s.step for s in rest] == [2, 3], "from checkpoint-1, the log cut back to it"
    keys = ("mean_reward", "drawn_reward", "tokens", "loss", "kl", "turns")
    assert [[getattr(s, k) for k in keys] for s in whole] == [
        [getattr(s, k) for k in keys] for s in run_log(tmp_path / "parts")
    ]
    assert all(s.groups for s in whole), "every step updates: the optimiser state matters"
    trained = (transformers.AutoModelForImageTextToText.from_pretrained(tmp_path / name)
               for name in ("whole", "parts"))  # fmt: skip
    a, b = (dict(m.named_parameters()) for m in trained)
    assert all(torch.equal(a[name], b[name]) for name in a)
    ends = [torch.load(tmp_path / n / STATE_FILE, weights_only=True) for n in ("whole", "parts")]
    assert ends[0]["order"] == ends[1]["order"] and ends[0]["queue"] == ends[1]["queue"]
    assert torch.equal(ends[0]["torch_rng"], ends[1]["torch_rng"])
    record = json.loads((tmp_path / "parts" / "rl.json").read_text())
    assert record["steps_done"] == 3 and record["resumed_after_step"] == 1
    assert record["base"] == tiny_qwen_dir and len(record["earlier_commands"]) == 1
    assert run(parts, resume=True) == [], "a finished run has nothing to resume"
    with pytest.raises(ConfigError, match=r"other settings .*learning_rate"):
        run(parts, steps=4, resume=True, learning_rate=1e-3)
    with pytest.raises(ConfigError, match=r"other settings .*questions"):
        train_rl(tiny_qwen_dir, samples[:1], parts, DAPOConfig(**{**settings, "steps": 4,
                 "resume": True}), log=None)  # fmt: skip
    assert [s.step for s in run(tmp_path / "whole", steps=4, resume=True)] == [4]


def run_log(folder: Path) -> list[Any]:
    """A run's ``log.jsonl`` as :class:`StepStats`."""
    from policies.training.rl import StepStats

    lines = (folder / "log.jsonl").read_text().splitlines()
    return [StepStats(**json.loads(line)) for line in lines]


def test_resuming_a_run_without_a_saved_state_says_so(tiny_qwen_dir: str, tmp_path: Path) -> None:
    from policies.training.rl import DAPOConfig, train_rl
    from video_env.errors import ConfigError

    config = DAPOConfig(steps=1, group_size=2, resume=True).with_episode(rules=SMOKE)
    with pytest.raises(ConfigError, match=r"no trainer_state\.pt"):
        train_rl(tiny_qwen_dir, load_suite("synth-tiny", limit=1), tmp_path / "rl", config)
