"""The Pacing env as TRL's multi-turn environment: tools, rewards, and GRPOTrainer on a CPU."""

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from policies.episode_settings import EpisodeSettings
from policies.training.cli import RULES
from policies.training.trl_env import PacingToolEnv, pacing_env_factory, tool_dataset_rows
from policies.videoscout.prompt import PromptLayout
from video_env.actions.types import SpeedAction
from video_env.errors import ConfigError
from video_env.synth.suites import load_suite

SMOKE = RULES["cpu-smoke"]()


def test_tools_step_the_env_and_return_the_next_frames() -> None:
    pytest.importorskip("PIL")
    (sample,) = load_suite("synth-tiny", limit=1)
    env = pacing_env_factory([sample], EpisodeSettings(rules=SMOKE))()
    (row,) = tool_dataset_rows([sample], SMOKE)
    assert set(row) == {"prompt", "sample_id"}  # no answer, no annotation
    assert "speed(factor, notes)" in row["prompt"][0]["content"]
    assert "<think>" not in row["prompt"][0]["content"]
    first = env.reset(**row)
    kinds = [part["type"] for part in first]
    assert kinds == ["text"] + ["image"] * SMOKE.speeds[1].frames + ["text"]
    assert sample.question in first[-1]["text"] and "chunks 1 to 1" in first[0]["text"]
    second = env.speed(2, notes="nothing yet")
    assert isinstance(second, list) and "chunks 2 to 3" in second[0]["text"]
    assert "nothing yet" in second[-1]["text"]  # the notes are the env's memory
    bad = env.rewatch(99)
    assert isinstance(bad, list) and "invalid" in bad[-1]["text"]
    assert env.episode is not None and env.get_reward() == 0.0  # never answered
    assert env.episode.record is not None and env.episode.record["ended_by"] == "no_answer"
    with pytest.raises(ConfigError, match="over"):
        env.speed(1)
    assert (env.resets, env.steps, len(env.actions)) == (1, 2, 2)


def test_answer_ends_with_the_composite_reward() -> None:
    pytest.importorskip("PIL")
    (sample,) = load_suite("synth-tiny", limit=1)
    env = PacingToolEnv({sample.id: sample}, EpisodeSettings(rules=SMOKE))
    env.reset(sample_id=sample.id)
    window = sample.gt_intervals[0]
    done = env.answer(str(sample.answer), window.start, window.end, notes="seen it")
    assert isinstance(done, str) and "over" in done
    record = env.episode.record if env.episode else None
    assert record is not None and record["correct"] is True
    assert record["reward_parts"]["fmt"] == pytest.approx(0.3)  # a parsed call is well-formed
    assert env.get_reward() == pytest.approx(record["reward"]) and env.get_reward() > 1.3
    with pytest.raises(ConfigError, match="unknown sample_id"):
        env.reset(sample_id="nope")


def test_the_tool_results_say_where_the_video_ends_where_asked() -> None:
    pytest.importorskip("PIL")
    from policies.videoscout import END_NOTE

    (sample,) = load_suite("synth-tiny", limit=1)
    for place in ("window", "last", "off"):
        env = pacing_env_factory(
            [sample], EpisodeSettings(rules=SMOKE, layout=PromptLayout(place))
        )()
        result: Any = env.reset(sample_id=sample.id)
        for _ in range(20):  # to the window that shows the last chunk
            if "(100%)" in result[0]["text"]:
                break
            result = env.speed(4, notes="skimming")
        texts = [part["text"] for part in result if part["type"] == "text"]
        assert (END_NOTE in texts[0], texts[-1].rstrip().endswith(END_NOTE)) == (
            place == "window",
            place == "last",
        )


def test_the_tool_results_ask_the_question_before_the_frames_where_asked() -> None:
    pytest.importorskip("PIL")
    (sample,) = load_suite("synth-tiny", limit=1)
    for first in (False, True):
        env = pacing_env_factory(
            [sample], EpisodeSettings(rules=SMOKE, layout=PromptLayout(question_first=first))
        )()
        result: Any = env.reset(sample_id=sample.id)
        kinds = [part["type"] for part in result]
        texts = [part["text"] for part in result if part["type"] == "text"]
        assert kinds[0] == "text" and kinds[-1] == "text" and "image" in kinds
        assert (f"Question: {sample.question}" in texts[0]) == first
        assert (f"Question: {sample.question}" in texts[-1]) != first


def test_factory_refuses_duplicate_ids() -> None:
    (sample,) = load_suite("synth-tiny", limit=1)
    with pytest.raises(ConfigError, match="unique"):
        pacing_env_factory([sample, sample])


@pytest.fixture(scope="module")
def flat_qwen_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny Qwen2.5-VL with small weights: near-uniform choices, so a group's rollouts differ."""
    pytest.importorskip("transformers")
    from video_env.backends.testing import tiny_qwen2_5_vl

    path = tmp_path_factory.mktemp("models") / "flat-qwen"
    return str(tiny_qwen2_5_vl(path, init_range=0.02))


def _speed_call(tokenizer: Any, factor: int) -> list[int]:
    text = f'<tool_call>\n{{"name": "speed", "arguments": {{"factor": {factor}}}}}\n</tool_call>'
    ids: list[int] = tokenizer(text + "<|im_end|>", add_special_tokens=False)["input_ids"]
    return ids


@pytest.mark.slow
def test_grpo_trainer_trains_in_the_pacing_env(flat_qwen_dir: str, tmp_path: Path) -> None:
    """``GRPOTrainer.train()`` with the env as ``environment_factory``, 1 step, G = 2.

    A random model never writes a tool call, so generation is steered (test only) with
    ``sequence_bias``: every prefix of ``speed(2)`` and ``speed(4)`` calls gets a bias
    growing with its length, so the model writes one of the two calls and its own logits
    choose the factor. The env's reward is 0 for all (no answer); a test-only shaping
    reward pays 1 for a first call at 4x, so the group's rewards differ; after the step
    the model's probability of choosing 4x at the branch of the two calls has risen.
    """
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("trl")
    from policies.training.trl_grpo import build_trl_trainer, trl_dapo_config

    samples = load_suite("synth-tiny", limit=2)
    processor = transformers.AutoProcessor.from_pretrained(flat_qwen_dir)
    model = transformers.AutoModelForImageTextToText.from_pretrained(flat_qwen_dir)
    calls = [_speed_call(processor.tokenizer, f) for f in (2, 4)]
    prefixes = sorted({tuple(call[:k]) for call in calls for k in range(1, len(call) + 1)})
    steer = [[list(prefix), 30.0 * len(prefix)] for prefix in prefixes]

    def fast_first(environments: list[PacingToolEnv], **_: Any) -> list[float]:
        return [
            float(
                bool(e.actions)
                and isinstance(e.actions[0], SpeedAction)
                and e.actions[0].factor == 4
            )
            for e in environments
        ]

    images_seen: list[int] = []

    def count_images(_module: Any, args: Any, kwargs: Any, _out: Any) -> None:
        grid = kwargs.get("grid_thw", args[1] if len(args) > 1 else None)
        images_seen.append(int(grid.shape[0]))

    model.model.visual.register_forward_hook(count_images, with_kwargs=True)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    config = trl_dapo_config(
        tmp_path / "out",
        num_generations=2,
        per_device_train_batch_size=4,
        max_steps=1,
        max_completion_length=1024,
        max_tool_calling_iterations=1,
        learning_rate=1e-2,
        logging_steps=1,
        save_strategy="no",
        use_cpu=True,
        seed=0,
        generation_kwargs={"sequence_bias": steer},
    )
    assert (config.loss_type, config.epsilon, config.epsilon_high, config.beta) == (
        "dapo",
        0.2,
        0.28,
        0.01,
    )
    assert config.lr_scheduler_type == "constant"  # as train rl's, resumed runs included
    trainer = build_trl_trainer(
        model,
        processor,
        samples,
        config,
        EpisodeSettings(rules=SMOKE, max_turns=4),
        reward_funcs=[fast_first],
    )
    branch = next(i for i, (a, b) in enumerate(zip(*calls, strict=True)) if a != b)
    probe = pacing_env_factory(samples, EpisodeSettings(rules=SMOKE))()

    def p_fast() -> list[float]:
        """P(4 | the call's prefix) against P(2), on each question's first prompt."""
        out = []
        for row in tool_dataset_rows(samples, SMOKE):
            task = [{"type": "text", "text": row["prompt"][-1]["content"]}]
            chat = [row["prompt"][0], {"role": "user", "content": task + probe.reset(**row)}]
            enc = trainer.processing_class.apply_chat_template(
                chat, tools=trainer.tools, add_generation_prompt=True, tokenize=True,
                return_dict=True, return_tensors="pt",
            )  # fmt: skip
            prefix = torch.tensor([calls[0][:branch]])
            ids = torch.cat([enc["input_ids"], prefix], 1)
            mm = torch.cat([enc["mm_token_type_ids"], torch.zeros_like(prefix)], 1)
            with torch.no_grad():
                logits = model(
                    input_ids=ids, attention_mask=torch.ones_like(ids), mm_token_type_ids=mm,
                    pixel_values=enc["pixel_values"], image_grid_thw=enc["image_grid_thw"],
                    logits_to_keep=1,
                ).logits[0, -1]  # fmt: skip
            pair = logits[[calls[0][branch], calls[1][branch]]].softmax(-1)
            out.append(float(pair[1]))
        return out

    before_fast = p_fast()
    images_seen.clear()
    trainer.train()

    envs: list[PacingToolEnv] = trainer._environment_pool[None]
    assert len(envs) == 4 and all(e.resets == 1 and e.steps == 1 for e in envs)
    assert {e.episode.sample.id for e in envs if e.episode} == {s.id for s in samples}
    log = trainer.state.log_history[0]
    assert log["tools/call_frequency"] == 1.0 and log["tools/failure_frequency"] == 0.0
    assert torch.isfinite(torch.tensor(log["loss"]))
    assert log["reward_std"] > 0  # the shaping reward differs within a group
    # The frames of reset and of each tool result reach the loss's forward pass (the
    # batch's four rollouts in one pass).
    shown = [SMOKE.speeds[1].frames + SMOKE.speeds[e.actions[0].factor].frames for e in envs]
    assert max(images_seen) == sum(shown)
    changed = [n for n, p in model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert changed
    after_fast = p_fast()
    assert all(a > b + 0.05 for a, b in zip(after_fast, before_fast, strict=True))


def _trainers_asked_for(
    extras: Sequence[Sequence[str]], model_dir: str, out: Path, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """The ``build_trl_trainer`` calls of ``train trl`` with each of ``extras``, untrained.

    Each run stops where the trainer would be built; its arguments are returned.
    """
    from policies.training import trl_grpo
    from video_env.cli import main

    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def stop(*args: Any, **kwargs: Any) -> None:
        calls.append((args, kwargs))
        raise RuntimeError("stopped before training")

    monkeypatch.setattr(trl_grpo, "build_trl_trainer", stop)
    command = ["train", "trl", "--model", model_dir, "--out", str(out), "--suite",
               "synth-tiny", "--limit", "1", "--rules", "cpu-smoke", "--steps", "1"]  # fmt: skip
    for extra in extras:
        with pytest.raises(RuntimeError, match="stopped"):
            main([*command, *extra])
    return calls


def test_train_trl_freezes_the_vision_towers_blocks_where_asked(
    flat_qwen_dir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("trl")
    calls = _trainers_asked_for([[], ["--freeze-vision"]], flat_qwen_dir, tmp_path, monkeypatch)
    given = [args[0] for args, _ in calls]
    path, model = given
    assert path == flat_qwen_dir  # TRL loads it itself
    frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
    assert any(n.startswith("model.visual.blocks.") for n in frozen)
    assert all(n.startswith("model.visual.") and "merger" not in n for n in frozen)
    assert any(p.requires_grad for n, p in model.named_parameters() if "merger" in n)


def test_train_trl_caps_each_reply_not_only_the_rollout(
    flat_qwen_dir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TRL gives each turn the rollout's whole budget; ``--max-new-tokens`` caps a turn."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("trl")
    from policies.training import trl_grpo

    extras = [["--max-completion-length", "900"], ["--max-completion-length", "900",
                                                   "--max-new-tokens", "7"]]  # fmt: skip
    configs = [args[3] for args, _ in _trainers_asked_for(extras, flat_qwen_dir, tmp_path,
                                                          monkeypatch)]  # fmt: skip
    default, capped = configs
    assert default.generation_kwargs == {"max_new_tokens": 4096}  # the paper's
    assert default.save_steps > 10**6  # no interval unless asked: a resumed run keeps it
    assert capped.generation_kwargs == {"max_new_tokens": 7}
    assert capped.max_completion_length == 900  # the rollout's budget is its own
    # TRL's generator takes the cap over its per-turn default of the rollout's budget.
    processor = transformers.AutoProcessor.from_pretrained(flat_qwen_dir)
    model = transformers.AutoModelForImageTextToText.from_pretrained(flat_qwen_dir)
    monkeypatch.undo()
    trainer = trl_grpo.build_trl_trainer(
        model, processor, load_suite("synth-tiny", limit=1), capped, EpisodeSettings(rules=SMOKE)
    )
    assert trainer.generation_config.max_new_tokens == 7
    assert trl_grpo.reply_token_cap(5, vllm=True) == {"generation_kwargs": {"max_tokens": 5}}
    with pytest.raises(ConfigError, match="positive"):
        trl_grpo.reply_token_cap(0)


def test_time_budget_stops_at_the_first_step_end_past_it() -> None:
    transformers = pytest.importorskip("transformers")
    from policies.training.trl_grpo import time_budget_callback

    now = [100.0]
    budget = time_budget_callback(30, clock=lambda: now[0])
    args, state = object(), transformers.TrainerState(max_steps=5)
    control = transformers.TrainerControl()
    budget.on_train_begin(args, state, control)
    for step, elapsed in enumerate((10.0, 29.0, 31.0), start=1):
        now[0] = 100.0 + elapsed
        state.global_step = step
        budget.on_step_end(args, state, control)
        assert control.should_training_stop == (elapsed >= 30)
        assert control.should_save == (elapsed >= 30)  # a checkpoint --resume continues
    assert budget.stopped_after == 3
    # a resumed run's budget counts the seconds its earlier calls spent
    resumed = time_budget_callback(30, clock=lambda: now[0], spent=25.0)
    state, control = transformers.TrainerState(max_steps=5), transformers.TrainerControl()
    now[0] = 0.0
    resumed.on_train_begin(args, state, control)
    now[0], state.global_step = 4.0, 1
    resumed.on_step_end(args, state, control)
    assert not control.should_training_stop
    now[0], state.global_step = 6.0, 2
    resumed.on_step_end(args, state, control)
    assert control.should_training_stop and resumed.stopped_after == 2
    # past the budget at the run's own last step: the steps ended it, not the budget
    last = time_budget_callback(30, clock=lambda: now[0])
    state, control = transformers.TrainerState(max_steps=1), transformers.TrainerControl()
    now[0] = 0.0
    last.on_train_begin(args, state, control)
    now[0], state.global_step = 40.0, 1
    last.on_step_end(args, state, control)
    assert last.stopped_after is None and not control.should_training_stop
    with pytest.raises(ConfigError, match="positive"):
        time_budget_callback(0)


def test_train_trl_hands_its_time_budget_to_the_trainer(
    flat_qwen_dir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("trl")
    calls = _trainers_asked_for([[], ["--max-seconds", "600"]], flat_qwen_dir, tmp_path,
                                monkeypatch)  # fmt: skip
    given = [[c for c in kwargs.get("callbacks", ()) if hasattr(c, "stopped_after")]
             for _, kwargs in calls]  # fmt: skip
    none, budgeted = given
    assert none == []
    assert [b.seconds for b in budgeted] == [600]


@pytest.mark.slow
def test_train_trl_command(flat_qwen_dir: str, tmp_path: Path) -> None:
    """``video-env train trl`` runs one GRPO step and saves a loadable checkpoint."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("trl")
    from video_env.cli import main

    out = str(tmp_path / "trl")
    assert main(["train", "trl", "--model", flat_qwen_dir, "--out", out, "--suite",
                 "synth-tiny", "--limit", "1", "--rules", "cpu-smoke", "--steps", "1",
                 "--group-size", "2", "--max-turns", "1", "--max-completion-length", "8",
                 "--no-gradient-checkpointing", "--seed", "3"]) == 0  # fmt: skip
    assert transformers.AutoModelForImageTextToText.from_pretrained(out) is not None
    record = json.loads((Path(out) / "trl.json").read_text())  # the run's record
    assert record["steps"] == 1 and record["seed"] == 3 and not record["freeze_vision"]
    assert record["machine"]["cpus"] >= 1 and record["seconds"] > 0 and record["log"]
    assert isinstance(record["command"], str)
    from policies.videoscout.tools import writes_tool_calls

    assert writes_tool_calls(out)  # it plays as videoscout-tools:OUT
    saved = transformers.AutoProcessor.from_pretrained(out)
    assert "<tool_call>" in saved.chat_template  # the tool-calling template travels with it
    from policies.training.cli import RULES
    from policies.videoscout.record import trained_rules

    assert trained_rules(out) == RULES["cpu-smoke"]()  # benches under the rules it trained on
    from policies.videoscout.record import trained_end_note

    assert trained_end_note(out) == "window"  # its start records none: the default place


def _saved_progress(out: Path, step: int, **changes: Any) -> None:
    """A ``checkpoint-STEP`` of a run from ``base`` whose progress callback saved it."""
    transformers = pytest.importorskip("transformers")
    from policies.training.trl_resume import progress_callback

    now = [0.0]
    fields = {"base": "base", "settings": {"max_steps": 4, "lr": 1e-5}, "questions": ["q1"],
              "commands": ["first", "second"], **changes}  # fmt: skip
    progress = progress_callback(**fields, spent=10.0, clock=lambda: now[0])
    args = transformers.TrainingArguments(output_dir=str(out), report_to="none")
    state = transformers.TrainerState(global_step=step)
    progress.on_train_begin(args, state, transformers.TrainerControl())
    now[0] = 5.0
    (out / f"checkpoint-{step}").mkdir(parents=True)
    progress.on_save(args, state, transformers.TrainerControl())


def test_resume_point_is_the_latest_checkpoint_of_the_same_run(tmp_path: Path) -> None:
    from policies.training.trl_resume import resume_point

    for step in (2, 10):
        _saved_progress(tmp_path, step)
    (tmp_path / "checkpoint-12").mkdir()  # one TRL saved without our progress: skipped
    point = resume_point(tmp_path, "base", {"max_steps": 20, "lr": 1e-5}, ["q1"])
    assert point.checkpoint == tmp_path / "checkpoint-10" and point.step == 10
    assert point.seconds == 15.0  # the earlier calls' 10 s and this call's 5 s
    assert point.commands == ("first", "second")
    # --steps may grow; everything else must be the run's own
    with pytest.raises(ConfigError, match="started from 'base', not 'other'"):
        resume_point(tmp_path, "other", {"max_steps": 4, "lr": 1e-5}, ["q1"])
    with pytest.raises(ConfigError, match=r"lr 1e-05 -> 0\.001"):
        resume_point(tmp_path, "base", {"max_steps": 4, "lr": 1e-3}, ["q1"])
    with pytest.raises(ConfigError, match="other questions"):
        resume_point(tmp_path, "base", {"max_steps": 4, "lr": 1e-5}, ["q2"])
    with pytest.raises(ConfigError, match="start it without --resume"):
        resume_point(tmp_path / "none", "base", {}, [])


def test_resume_point_refuses_another_number_of_processes(tmp_path: Path) -> None:
    """A step's questions count every process's batch: a continuation keeps the count."""
    from policies.training.trl_resume import resume_point

    run = {"max_steps": 4, "lr": 1e-5}
    _saved_progress(tmp_path / "eight", 2, settings={**run, "world_size": 8})
    assert resume_point(tmp_path / "eight", "base", {**run, "world_size": 8}, ["q1"]).step == 2
    with pytest.raises(ConfigError, match="world_size 8 -> 1"):
        resume_point(tmp_path / "eight", "base", {**run, "world_size": 1}, ["q1"])
    # a run saved before the count was kept ran on one process
    _saved_progress(tmp_path / "older", 2, settings=run)
    assert resume_point(tmp_path / "older", "base", {**run, "world_size": 1}, ["q1"]).step == 2
    with pytest.raises(ConfigError, match="world_size 1 -> 2"):
        resume_point(tmp_path / "older", "base", {**run, "world_size": 2}, ["q1"])


def test_train_trl_records_its_number_of_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's settings hold the launcher's count, which a resumed call must repeat."""
    from policies.training.cli_rl import _trl_run_settings
    from video_env.cli import build_parser
    from video_env.env_vars import WORLD_SIZES

    for variable in (v.name for v in WORLD_SIZES):
        monkeypatch.delenv(variable, raising=False)
    args = build_parser().parse_args(["train", "trl", "--model", "m", "--out", "o"])

    def run() -> dict[str, Any]:
        return _trl_run_settings(args, {"max_steps": 4}, RULES["paper"](), PromptLayout())

    assert run()["world_size"] == 1  # no launcher
    monkeypatch.setenv("WORLD_SIZE", "4")  # torchrun, accelerate launch
    assert run()["world_size"] == 4
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")  # mpirun (accelerate reads it first)
    assert run()["world_size"] == 2
    for bad in ("four", "0", "-1"):
        monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", bad)
        with pytest.raises(ConfigError, match=r"OMPI_COMM_WORLD_SIZE=.* not a number of processes"):
            run()


@pytest.mark.slow
def test_train_trl_resumes_a_run_stopped_by_time(
    flat_qwen_dir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run stopped by ``--max-seconds`` saves a checkpoint; ``--resume`` takes the rest.

    The checkpoint's weights are moved by 0.5 (as if it had learned): the resumed run
    must go on from them, not from its base (TRL's own reload would not load them).
    """
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("trl")
    from video_env.cli import main

    out = tmp_path / "trl"
    command = ["train", "trl", "--model", flat_qwen_dir, "--out", str(out), "--suite",
               "synth-tiny", "--limit", "1", "--rules", "cpu-smoke", "--steps", "3",
               "--group-size", "2", "--max-turns", "1", "--max-completion-length", "8",
               "--no-gradient-checkpointing", "--seed", "3"]  # fmt: skip
    assert main([*command, "--max-seconds", "0.001"]) == 0  # stops after its first step
    first = json.loads((out / "trl.json").read_text())
    assert first["steps"] == 1 and first["stopped_by_time"]
    load = transformers.AutoModelForImageTextToText.from_pretrained
    learned = _moved_checkpoint(str(out / "checkpoint-1"), out / "checkpoint-1", torch.float32)
    # the same command again: its budget is spent, so no step starts
    capsys.readouterr()
    assert main([*command, "--max-seconds", "0.001", "--resume"]) == 0
    assert "has done 1 of 3 steps" in capsys.readouterr().out
    assert json.loads((out / "trl.json").read_text())["steps"] == 1
    assert main([*command, "--max-seconds", "3600", "--resume"]) == 0  # a larger budget
    record = json.loads((out / "trl.json").read_text())
    assert record["steps"] == 3 and not record["stopped_by_time"]
    assert record["resumed_after_step"] == 1 and len(record["earlier_commands"]) == 1
    assert [entry["step"] for entry in record["log"] if "loss" in entry] == [1, 2, 3]
    base, final = load(flat_qwen_dir).state_dict(), load(out).state_dict()
    for name, weights in learned.state_dict().items():  # lr 5e-6: two steps move little
        assert (final[name] - weights).abs().max() < 1e-3, name
        assert (final[name] - base[name]).abs().min() > 0.4, name
    capsys.readouterr()
    assert main([*command, "--resume", "--steps", "4", "--lr", "1e-3"]) == 2
    assert "learning_rate 5e-06 -> 0.001" in capsys.readouterr().err
    assert main([*command, "--resume", "--steps", "4", "--freeze-vision"]) == 2
    assert "freeze_vision False -> True" in capsys.readouterr().err
    assert main([*command, "--resume"]) == 0
    assert "has done 3 of 3 steps" in capsys.readouterr().out
    assert main([*command, "--resume", "--rules", "paper"]) == 2
    assert "rules" in capsys.readouterr().err
    # stopped between its last checkpoint and its final model: the model is saved, no step
    (out / "trl.json").write_text("{")
    (out / "model.safetensors").unlink()
    assert main([*command, "--resume"]) == 0
    again = json.loads((out / "trl.json").read_text())
    assert again["steps"] == 3 and again["resumed_after_step"] == 3
    assert [entry["step"] for entry in again["log"] if "loss" in entry] == [1, 2, 3]
    assert all(torch.equal(t, final[n]) for n, t in load(out).state_dict().items())


def test_resumed_weights_are_the_checkpoints_not_the_bases(
    flat_qwen_dir: str, tmp_path: Path
) -> None:
    """The trainer's own reload matches no saved name of Qwen2.5-VL; ours loads them all."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from policies.training.trl_resume import load_policy_weights

    load = transformers.AutoModelForImageTextToText.from_pretrained
    trained = _moved_checkpoint(flat_qwen_dir, tmp_path / "checkpoint-1", torch.float32)
    model = load(flat_qwen_dir)
    load_policy_weights(model, tmp_path / "checkpoint-1")
    for (name, mine), theirs in zip(model.state_dict().items(),
                                    trained.state_dict().values(), strict=True):  # fmt: skip
        assert torch.equal(mine, theirs), name
    assert model.config._name_or_path == flat_qwen_dir  # TRL's KL reference stays the base
    with pytest.raises(ConfigError, match="not the weights of this model"):
        load_policy_weights(model, _other_size(flat_qwen_dir, tmp_path / "other"))


def test_resumed_weights_keep_a_bf16_policy_in_bf16(
    flat_qwen_dir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--bf16``: a checkpoint saved in float32 is read in bf16 and the policy stays bf16."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from policies.training.trl_resume import load_policy_weights

    auto = transformers.AutoModelForImageTextToText
    load = auto.from_pretrained
    trained = _moved_checkpoint(flat_qwen_dir, tmp_path / "checkpoint-1", torch.float32)
    model = load(flat_qwen_dir, dtype=torch.bfloat16)
    read_as: list[Any] = []

    def spy(path: Any, *args: Any, **kwargs: Any) -> Any:
        read_as.append(kwargs.get("dtype"))
        return load(path, *args, **kwargs)

    monkeypatch.setattr(auto, "from_pretrained", spy)
    load_policy_weights(model, tmp_path / "checkpoint-1")
    assert read_as == [torch.bfloat16]  # not a float32 copy beside the policy
    for (name, mine), theirs in zip(model.state_dict().items(),
                                    trained.state_dict().values(), strict=True):  # fmt: skip
        assert mine.dtype == torch.bfloat16, name
        assert torch.equal(mine, theirs.to(torch.bfloat16)), name


def _moved_checkpoint(model_dir: str, out: Path, dtype: Any) -> Any:
    """``model_dir``'s model in ``dtype``, every weight moved by 0.5, saved to ``out``.

    A checkpoint as the trainer saves one, as if the run had learned; returns the model.
    """
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    trained = transformers.AutoModelForImageTextToText.from_pretrained(model_dir, dtype=dtype)
    with torch.no_grad():
        for parameter in trained.parameters():
            parameter.add_(0.5)
    trained.save_pretrained(out)
    return trained


def _other_size(model_dir: str, out: Path) -> Path:
    """A copy of ``model_dir``'s model with a wider language model's MLP, randomly set."""
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.from_pretrained(model_dir)
    config.text_config.intermediate_size *= 2
    transformers.AutoModelForImageTextToText.from_config(config).save_pretrained(out)
    return out
