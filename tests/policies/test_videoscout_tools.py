"""VideoScout in TRL's tool-calling chat: the policy, its model backend, the registry name."""

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from policies.episode_settings import EpisodeSettings
from policies.runner import run_episode
from policies.training.cli import RULES
from policies.training.distill import DistillConfig, distill
from policies.training.teachers import GroundTruthScriptedTeacher
from policies.training.tool_chats import tool_chat
from policies.training.trl_env import tool_action
from policies.videoscout.tools import (
    VideoScoutToolPolicy,
    first_call,
    format_valid_call,
    reply_action,
    writes_tool_calls,
)
from video_env.actions.types import AnswerAction, InvalidAction, RewatchAction, SpeedAction
from video_env.backends.transformers_tool_chat import ToolReply
from video_env.envs.pacing import PacingEnv
from video_env.errors import ConfigError
from video_env.synth.suites import load_suite

pytest.importorskip("PIL")
SMOKE = RULES["cpu-smoke"]()


class ScriptedToolModel:
    """Replies with the given assistant turns in order (a stand-in for a trained model)."""

    name = "scripted"

    def __init__(self, turns: list[dict[str, Any]]) -> None:
        self.turns = list(turns)
        self.seen: list[list[dict[str, Any]]] = []

    def reply(self, messages: list[dict[str, Any]], tools: list[Any], **_: Any) -> ToolReply:
        self.seen.append(list(messages))
        message = self.turns.pop(0)
        return ToolReply(message, str(message["content"]), 10, 3)


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def _episode(policy: VideoScoutToolPolicy, sample: Any) -> dict[str, Any]:
    env = PacingEnv([sample], **policy.env_kwargs["pacing"])
    try:
        return run_episode(env, policy, seed=0, options={"sample": sample})
    finally:
        env.close()


def _same(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> bool:
    """Two chats alike, images compared by their pixels."""
    if len(left) != len(right):
        return False
    for a, b in zip(left, right, strict=True):
        if {k: v for k, v in a.items() if k != "content"} != {
            k: v for k, v in b.items() if k != "content"
        }:
            return False
        ca, cb = a["content"], b["content"]
        if isinstance(ca, str) or isinstance(cb, str):
            if ca != cb:
                return False
            continue
        for pa, pb in zip(ca, cb, strict=True):
            if pa["type"] != pb["type"]:
                return False
            if pa["type"] == "image":
                if not np.array_equal(np.asarray(pa["image"]), np.asarray(pb["image"])):
                    return False
            elif pa != pb:
                return False
    return True


def test_tool_calls_become_the_actions_trl_applies() -> None:
    assert tool_action("speed", {"factor": 2, "notes": "n"}) == SpeedAction(2, "n")
    assert tool_action("rewatch", {"chunk": "3"}) == RewatchAction(3, None)
    answer = tool_action("answer", {"answer": " B", "start": 1, "end": 4})
    assert isinstance(answer, AnswerAction) and answer.text == "B" and answer.window.end == 4
    assert tool_action("speed", {"factor": 4.0}) == SpeedAction(4, None)
    for name, arguments, says in [
        ("jump", {}, "unknown tool"),
        ("speed", {"speed": 2}, "bad arguments"),
        ("speed", {"factor": "fast"}, "speed factor"),
        ("speed", {"factor": float("inf")}, "speed factor"),  # JSON's Infinity parses
        ("speed", {"factor": 2.5}, "speed factor"),
        ("speed", {"factor": True}, "speed factor"),
        ("rewatch", {"chunk": "two"}, "chunk number"),
        ("speed", {"factor": 2, "notes": ["a"]}, "notes must be text"),
        ("answer", {"answer": "B", "start": "x", "end": 4}, "window"),
        ("answer", {"answer": "B", "start": 1e999, "end": 4}, "window"),
        ("answer", {"answer": "B", "start": 1, "end": 10**400}, "window"),
        ("answer", {"answer": "B", "start": 9, "end": 4}, "window"),
        ("answer", {"answer": "B", "start": 1, "end": 4, "notes": 7}, "notes"),
    ]:
        action = tool_action(name, arguments)
        assert isinstance(action, InvalidAction) and says in action.reason, (name, arguments)


def test_a_replys_first_call_is_read_in_either_form_and_anything_else_is_invalid() -> None:
    speed = _call("speed", factor=2)
    flat = {"name": "speed", "arguments": {"factor": 2}}  # TRL's validator takes it too
    assert reply_action({"tool_calls": [speed, _call("answer", answer="A")]}) == SpeedAction(2)
    assert reply_action({"tool_calls": [flat]}) == SpeedAction(2)
    assert first_call({"content": "no call"}) is None
    for broken, says in [
        ({"tool_calls": []}, "no tool call"),
        ({"tool_calls": {"name": "speed"}}, "no tool call"),
        ({"tool_calls": ["speed(2)"]}, "not an object"),
        ({"tool_calls": [{"function": "speed"}]}, "not an object"),
        ({"tool_calls": [{"function": {"name": "speed", "arguments": "2"}}]}, "not an object"),
    ]:
        action = reply_action(broken)
        assert isinstance(action, InvalidAction) and says in action.reason, broken
        assert not format_valid_call(broken)
    assert format_valid_call({"tool_calls": [speed]})


def test_the_policy_needs_its_episode_started() -> None:
    policy = VideoScoutToolPolicy(ScriptedToolModel([]), rules=SMOKE)
    with pytest.raises(ConfigError, match="reset"):
        policy.act({}, {})


def test_an_episode_replays_the_chat_of_the_tool_call_sft_data(tmp_path: Path) -> None:
    """The policy's chat is the tool chat `train tool-chats` writes for the same replies.

    The assistant turns are the scripted model's own; what is compared is every system,
    user and tool turn the policy renders from the env's observations (frames by pixels).
    """
    sample = load_suite("synth-tiny", limit=1)[0]
    replies = _teacher_replies(sample, tmp_path)
    messages, reward = tool_chat(sample, replies, EpisodeSettings(rules=SMOKE))
    assistant = [m for m in messages[:-1] if m["role"] == "assistant"]  # "Done." is TRL's end
    model = ScriptedToolModel(assistant)
    policy = VideoScoutToolPolicy(model, rules=SMOKE)
    record = _episode(policy, sample)
    assert record["ended_by"] == "answer" and record["error"] is None
    assert record["reward"] == pytest.approx(reward)
    assert _same(policy.chat, messages[: len(policy.chat)])  # every turn as TRL renders it
    assert len(policy.chat) == len(messages) - 2  # all but the answer's result and "Done."
    assert record["llm_calls"] == len(assistant) and record["completion_tokens"] == 3 * len(
        assistant
    )


def _teacher_replies(sample: Any, folder: Path) -> list[str]:
    """The scripted teacher's Think-Act replies on ``sample`` (what `train distill` keeps)."""
    distill(
        GroundTruthScriptedTeacher(), [sample], folder, DistillConfig().with_episode(rules=SMOKE)
    )
    (row,) = [json.loads(line) for line in (folder / "trajectories.jsonl").open()]
    return list(row["replies"])


def test_a_reply_without_a_call_is_an_invalid_action_and_the_feedback_a_user_turn() -> None:
    sample = load_suite("synth-tiny", limit=1)[0]
    answer = _call("answer", answer="A", start=0, end=5)
    model = ScriptedToolModel(
        [
            {"role": "assistant", "content": "I will just talk."},
            {"role": "assistant", "content": "", "tool_calls": [_call("jump")]},
            {"role": "assistant", "content": "", "tool_calls": [answer]},
        ]
    )
    policy = VideoScoutToolPolicy(model, rules=SMOKE)
    record = _episode(policy, sample)
    assert record["ended_by"] == "answer"
    roles = [m["role"] for m in policy.chat]
    assert roles == ["system", "user", "assistant", "user", "assistant", "tool", "assistant"]
    feedback = " ".join(p["text"] for p in policy.chat[3]["content"] if p["type"] == "text")
    assert "no tool call" in feedback  # the env's error, shown as after any invalid reply
    assert policy.chat[5]["name"] == "jump"
    unknown = " ".join(p["text"] for p in policy.chat[5]["content"] if p["type"] == "text")
    assert "unknown tool" in unknown


@pytest.fixture(scope="module")
def tool_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("trl")
    from policies.training.trl_env import tool_chat_processor
    from video_env.backends.testing import tiny_qwen2_5_vl

    folder = tiny_qwen2_5_vl(tmp_path_factory.mktemp("tools") / "tiny", init_range=0.02)
    processor = transformers.AutoProcessor.from_pretrained(folder)
    tool_chat_processor(processor).save_pretrained(folder)
    return Path(folder)


def test_a_tool_checkpoint_plays_an_episode_by_name(
    tool_checkpoint: Path, tiny_qwen_dir: str
) -> None:
    from policies.registry import make
    from video_env.backends.transformers_tool_chat import TransformersToolChat

    assert writes_tool_calls(tool_checkpoint) and not writes_tool_calls(tiny_qwen_dir)
    with pytest.raises(ConfigError, match="tool calls"):
        TransformersToolChat(tiny_qwen_dir)  # a Think-Act checkpoint
    policy = make(f"videoscout-tools:{tool_checkpoint}?max_new_tokens=8", rules=SMOKE)
    assert isinstance(policy, VideoScoutToolPolicy)
    sample = load_suite("synth-tiny", limit=1)[0]
    record = _episode(policy, sample)
    assert record["error"] is None and record["llm_calls"] >= 1
    assert record["random_weights"]  # labelled: a tiny random model's replies mean nothing
    assert policy.chat[2]["role"] == "assistant" and record["prompt_tokens"] > 0


def test_a_chat_past_the_context_ends_the_episode_unanswered(tool_checkpoint: Path) -> None:
    from video_env.backends.transformers_tool_chat import TransformersToolChat

    model = TransformersToolChat(str(tool_checkpoint))
    model.max_positions = 64
    policy = VideoScoutToolPolicy(model, rules=SMOKE)
    record = _episode(policy, load_suite("synth-tiny", limit=1)[0])
    assert record["ended_by"] == "context_full" and record["error"] is None
    assert not record["correct"] and record["llm_calls"] == 0
