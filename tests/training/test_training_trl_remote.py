"""TRL's environment_factory driving Pacing sessions on a local OpenEnv server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openenv")

from policies.episode_settings import EpisodeSettings
from policies.training.adapter import RemotePacingEnv
from policies.training.cli import RULES
from policies.training.trl_env import PacingToolEnv, pacing_env_factory
from policies.training.trl_remote import remote_pacing_env_factory, server_env_kwargs
from video_env.serving.testing import LocalServer
from video_env.synth.suites import load_suite

SMOKE = RULES["cpu-smoke"]()


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    samples = load_suite("synth-tiny", limit=2)
    kwargs = server_env_kwargs(samples, EpisodeSettings(rules=SMOKE))
    with LocalServer("VideoEnv/Pacing-v0", kwargs, max_sessions=8, image_format="png") as srv:
        yield srv


def test_remote_tools_give_the_in_process_chat(server: LocalServer) -> None:
    """Same text parts, same frames (PNG: lossless), same rewards, as in-process."""
    pytest.importorskip("PIL")
    import numpy as np

    samples = load_suite("synth-tiny", limit=2)
    remote = remote_pacing_env_factory(samples, server.base_url, EpisodeSettings(rules=SMOKE))()
    local = pacing_env_factory(samples, EpisodeSettings(rules=SMOKE))()
    row = {"sample_id": samples[1].id}

    def same(a: list[dict[str, Any]] | str, b: list[dict[str, Any]] | str) -> bool:
        if isinstance(a, str) or isinstance(b, str):
            return a == b
        if [p["type"] for p in a] != [p["type"] for p in b]:
            return False
        for x, y in zip(a, b, strict=True):
            if x["type"] == "text" and x["text"] != y["text"]:
                return False
            if x["type"] == "image" and not np.array_equal(
                np.asarray(x["image"]), np.asarray(y["image"])
            ):
                return False
        return True

    assert same(remote.reset(**row), local.reset(**row))
    assert same(remote.speed(2, notes="n"), local.speed(2, notes="n"))
    assert same(remote.rewatch(99), local.rewatch(99))  # invalid: the env's message
    window = samples[1].gt_intervals[0]
    answer = str(samples[1].answer)
    assert same(
        remote.answer(answer, window.start, window.end),
        local.answer(answer, window.start, window.end),
    )
    assert remote.get_reward() == pytest.approx(local.get_reward()) and remote.get_reward() > 1
    assert server.sessions()["created"] >= 1


def test_unanswered_remote_episode_is_abandoned_with_reward_zero(server: LocalServer) -> None:
    samples = load_suite("synth-tiny", limit=2)
    env = remote_pacing_env_factory(samples, server.base_url, EpisodeSettings(rules=SMOKE))()
    env.reset(sample_id=samples[0].id)
    env.speed(1)
    assert env.get_reward() == 0.0
    assert env.episode is not None and env.episode.record is not None
    assert env.episode.record["ended_by"] == "no_answer"
    env.episode.close()


@pytest.mark.slow
def test_grpo_step_against_a_local_server(server: LocalServer, tmp_path: Path) -> None:
    """``GRPOTrainer.train()``, 1 step, G = 2, every rollout's env a server session."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("trl")
    from policies.training.trl_grpo import build_trl_trainer, trl_dapo_config
    from video_env.backends.testing import tiny_qwen2_5_vl

    samples = load_suite("synth-tiny", limit=2)
    model_dir = str(tiny_qwen2_5_vl(tmp_path / "qwen", init_range=0.02))
    processor = transformers.AutoProcessor.from_pretrained(model_dir)
    model = transformers.AutoModelForImageTextToText.from_pretrained(model_dir)
    calls = [
        processor.tokenizer(
            f'<tool_call>\n{{"name": "speed", "arguments": {{"factor": {f}}}}}\n</tool_call>'
            "<|im_end|>",
            add_special_tokens=False,
        )["input_ids"]
        for f in (2, 4)
    ]
    prefixes = sorted({tuple(c[:k]) for c in calls for k in range(1, len(c) + 1)})
    steer = [[list(prefix), 30.0 * len(prefix)] for prefix in prefixes]  # as test_training_trl

    def fast_first(environments: list[PacingToolEnv], **_: Any) -> list[float]:
        return [
            float(bool(e.actions) and getattr(e.actions[0], "factor", 0) == 4) for e in environments
        ]

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
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    created = server.sessions()["created"]
    trainer = build_trl_trainer(
        model,
        processor,
        samples,
        config,
        EpisodeSettings(rules=SMOKE, max_turns=4),
        reward_funcs=[fast_first],
        make_env=RemotePacingEnv(server.base_url),
    )
    trainer.train()
    envs: list[PacingToolEnv] = trainer._environment_pool[None]
    assert len(envs) == 4 and all(e.resets == 1 and e.steps == 1 for e in envs)
    assert server.sessions()["created"] - created == 4  # one server session a rollout
    log = trainer.state.log_history[0]
    assert log["tools/call_frequency"] == 1.0 and log["tools/failure_frequency"] == 0.0
    assert torch.isfinite(torch.tensor(log["loss"])) and log["reward_std"] > 0
    changed = [n for n, p in model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert changed


@pytest.mark.slow
def test_train_trl_command_with_env_url(server: LocalServer, tmp_path: Path) -> None:
    """``video-env train trl --env-url``: the rollouts' episodes are server sessions."""
    pytest.importorskip("transformers")
    pytest.importorskip("trl")
    from video_env.backends.testing import tiny_qwen2_5_vl
    from video_env.cli import main

    model_dir = str(tiny_qwen2_5_vl(tmp_path / "qwen", init_range=0.02))
    created = server.sessions()["created"]
    assert main(["train", "trl", "--model", model_dir, "--out", str(tmp_path / "trl"),
                 "--suite", "synth-tiny", "--limit", "2", "--rules", "cpu-smoke", "--steps",
                 "1", "--group-size", "2", "--max-turns", "1", "--max-completion-length", "8",
                 "--no-gradient-checkpointing", "--env-url", server.base_url]) == 0  # fmt: skip
    assert server.sessions()["created"] - created == 2  # one session per rollout (G = 2)


def test_a_session_lost_mid_episode_scores_zero_and_training_goes_on() -> None:
    """TRL does not catch ``get_reward``'s errors: a lost server must not stop training."""
    samples = load_suite("synth-tiny", limit=2)
    kwargs = server_env_kwargs(samples, EpisodeSettings(rules=SMOKE))
    with LocalServer("VideoEnv/Pacing-v0", kwargs, max_sessions=2) as lost:
        tools = remote_pacing_env_factory(samples, lost.base_url, EpisodeSettings(rules=SMOKE))()
        tools.reset(sample_id=samples[0].id)
    assert tools.get_reward() == 0.0  # the server is gone: abandoning the episode failed
    assert tools.episode is not None and tools.episode.record["ended_by"] == "lost_session"
