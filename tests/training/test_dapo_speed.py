"""DAPO at speed (issue 72): a group's shared first turn, the shared vision cache, phase times."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from policies.episode_settings import EpisodeSettings
from policies.training.cli import RULES
from video_env.synth.suites import load_suite

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SMOKE = RULES["cpu-smoke"]()


def policy_chat(model_dir: str, **options: Any) -> Any:
    from policies.training.rollout import PolicyChat

    processor = transformers.AutoProcessor.from_pretrained(model_dir)
    model = transformers.AutoModelForImageTextToText.from_pretrained(model_dir)
    return PolicyChat(model, processor, **options)


def test_a_groups_identical_first_turns_are_one_call_with_the_same_replies(
    tiny_qwen_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import policies.training.rollout as rollout

    calls: list[int] = []
    real_generate = rollout.generate  # type: ignore[attr-defined]

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs.get("rows_per_prompt", 1))
        return real_generate(*args, **kwargs)

    monkeypatch.setattr(rollout, "generate", counted)
    sample = load_suite("synth-tiny", limit=1)[0]
    episode = EpisodeSettings(rules=SMOKE, max_turns=2, max_new_tokens=6, temperature=0.0)
    groups = {}
    for share in (False, True):
        calls.clear()
        chat = policy_chat(tiny_qwen_dir, share_first_turn=share)
        group = rollout.rollout_group(chat, sample, episode, group_size=3, seed=0)
        groups[share] = ([[t.reply_ids for t in g.turns] for g in group], list(calls))
    (alone, separate), (shared, together) = groups[False], groups[True]
    assert shared == alone, "greedy: the shared turn's rows are the separate calls' replies"
    assert together[0] == 3 and len(together) == len(separate) - 2


def test_a_step_logs_the_seconds_of_each_phase_and_beta_zero_has_no_reference(
    tiny_qwen_dir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import policies.training.rl as rl
    from policies.training.dapo import DAPOSettings
    from policies.training.rl import DAPOConfig, train_rl

    def rewards_that_differ(*args: Any, **kwargs: Any) -> list[Any]:
        group = real_rollout_group(*args, **kwargs)
        return [replace(t, reward=float(i)) for i, t in enumerate(group)]

    real_rollout_group = rl.rollout_group  # type: ignore[attr-defined]
    monkeypatch.setattr(rl, "rollout_group", rewards_that_differ)
    loads: list[str] = []
    real_load = transformers.AutoModelForImageTextToText.from_pretrained

    def counted_load(path: Any, **kwargs: Any) -> Any:
        loads.append(str(path))
        return real_load(path, **kwargs)

    auto = transformers.AutoModelForImageTextToText
    monkeypatch.setattr(auto, "from_pretrained", counted_load)
    samples = load_suite("synth-tiny", limit=1)
    episode = EpisodeSettings(rules=SMOKE, max_turns=2, max_new_tokens=6, temperature=1.0)
    base: dict[str, Any] = {
        "steps": 1, "group_size": 2, "groups_per_step": 1, "max_draws_per_step": 1,
        "dynamic_filter": "equal-reward", "overlong": "none", "episode": episode,
        "freeze_vision": True,
    }  # fmt: skip
    for beta in (0.01, 0.0):
        loads.clear()
        out = tmp_path / f"beta-{beta}"
        config = DAPOConfig(**base, loss=DAPOSettings(beta=beta))
        lines: list[str] = []
        (stats,) = train_rl(tiny_qwen_dir, samples, out, config, log=lines.append)
        logged = json.loads((out / "log.jsonl").read_text().splitlines()[0])
        assert stats.groups == 1
        assert logged["rollout_s"] > 0 and logged["forward_s"] > 0 and logged["backward_s"] > 0
        assert sum(logged[k] for k in ("rollout_s", "reference_s", "forward_s",
                                       "backward_s")) <= logged["seconds"]  # fmt: skip
        assert "rollouts " in lines[-1] and "backward " in lines[-1]
        assert len(loads) == (2 if beta > 0 else 1), "beta 0: no reference model is loaded"
