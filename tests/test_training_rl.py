"""DAPO with a tiny random Qwen2.5-VL: the pipeline end to end, and a toy task it learns.

The teacher is ``GroundTruthScriptedTeacher`` (reads the answer window; a teacher only).
"""

import json
from pathlib import Path
from typing import Any

import pytest

from policies.training.cli import RULES
from policies.training.distill import (
    DistillConfig,
    distill,
    load_reference_chunks,
    with_reference_chunks,
)
from policies.training.teachers import GroundTruthScriptedTeacher
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


@pytest.mark.slow
def test_distill_then_sft_then_dapo(tmp_path: Path) -> None:
    from policies.training.rl import DAPOConfig, train_rl
    from policies.training.sft import SFTSettings, train_sft
    from video_env.backends.testing import tiny_qwen2_5_vl

    samples = load_suite("synth-tiny", limit=1)
    distill(GroundTruthScriptedTeacher(), samples, tmp_path / "data", DistillConfig(rules=SMOKE))
    base = tiny_qwen2_5_vl(tmp_path / "base", init_range=0.02)
    settings = SFTSettings(learning_rate=3e-3, batch_size=2, per_device_batch=2, max_steps=4,
                           warmup_ratio=0.0, scheduler="constant", progress_bar=False)  # fmt: skip
    sft = train_sft(str(base), tmp_path / "data" / "turns.jsonl", tmp_path / "sft", settings)
    assert sft.losses[-1] < sft.losses[0]
    chunks = load_reference_chunks(tmp_path / "data" / "trajectories.jsonl")
    tagged = with_reference_chunks(samples, chunks)
    config = DAPOConfig(group_size=2, groups_per_step=1, max_draws_per_step=2, steps=1,
                        max_turns=2, max_new_tokens=6, rules=SMOKE)  # fmt: skip
    history = train_rl(str(tmp_path / "sft"), tagged, tmp_path / "rl", config, log=None)
    (step,) = history
    assert step.drawn >= 1 and step.dropped + step.groups == step.drawn
    logged = json.loads((tmp_path / "rl" / "log.jsonl").read_text())
    assert logged["step"] == 1 and logged["drawn"] == step.drawn
    assert transformers.AutoModelForImageTextToText.from_pretrained(tmp_path / "rl") is not None


@pytest.mark.slow
def test_the_rewarded_action_becomes_more_likely(tiny_qwen_dir: str) -> None:
    """One turn of the Pacing env; the reward is 1 when the reply is one chosen token."""
    from policies.training.dapo import DAPOSettings, fill_batch
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
    batch = fill_batch(draw, lambda g: [t.reward for t in g], n_groups=1, max_draws=6)
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
