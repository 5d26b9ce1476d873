"""The dialect VLM policies: each trained system's literal replies drive its Tools preset.

``ScriptedChat`` is a test double of the ``VisionChat`` protocol: it returns the given
replies (written as each system's model writes them, from the released prompts'
examples) and keeps the messages it was given. It is not a model.
"""

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import policies
import video_env  # noqa: F401  (registers the envs)
from policies import run_episode
from policies.tool_dialects import DIALECTS, ToolDialectPolicy
from video_env.actions.types import InvalidAction
from video_env.backends.base import FrameBatch, VisionChat, VisionMessage
from video_env.backends.llm.base import Completion
from video_env.envs.tool_rules import FrameRule
from video_env.errors import ConfigError, UnknownNameError
from video_env.metrics.cost import Cost


class ScriptedChat:
    """Returns the given replies in order, recording each call's messages."""

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
        return Completion(
            text=self.replies.pop(0), model="scripted", prompt_tokens=9, completion_tokens=3
        )


#: A tool call and an answer per system, in its model's literal format (the examples of
#: the released prompts, times moved inside synth-tiny's 193 s video).
REPLIES = {
    "longvt": (
        '<think>The clock is shown near the start.</think> <tool_call>{"name": "crop_video", '
        '"arguments": {"video_path": "/video.mp4", "start_time": 10.0, "end_time": 20.0}}'
        "</tool_call>",
        "<think>It reads 6:45.</think> <answer>A</answer>",
    ),
    "videozoomer": (
        '<think>Ambiguous motion.</think><video_zoom> {"segment": [4.0, 6.0], "fps": 2} '
        "</video_zoom> and text the stop string cuts off",
        "<think>Now I see it.</think><answer>A</answer>",
    ),
    "timesearch-r": (
        '<think>Find the clock.</think><tool_call>\n{"name": "seek_video_frames", "arguments": '
        '{"query": "an alarm clock", "start_time": 10, "end_time": 40, "num_frames": 4}}\n'
        "</tool_call>",
        "<think>The frames show it.</think><answer>A</answer>",
    ),
    "framethinker": (
        "<think>Between 30 and 300.</think><action>choose frames between 30 and 300</action>",
        "<think>It is A.</think><action>output answer: A</action>",
    ),
    "video-mtr": (
        "<think>I need to check the clock.</think><retrieve>5,10</retrieve>",
        "<think>I would choose A.</think><answer>A</answer>",
    ),
}
#: Where each system's tool-result turn puts a frame's label (before its image).
LABELS = {
    "longvt": None,  # images only: the span is in the result's text
    "videozoomer": r"<frame0_time4.00s>",
    "timesearch-r": None,  # checked below: "{t:.1f}s" before each image
    "framethinker": "frame ",
    "video-mtr": "frame_idx:",
}
#: Small previews keep the tests fast (the presets' own are up to 768 frames).
SMALL_PREVIEW = FrameRule(n=8, max_frames=8, max_pixels=224 * 224, min_pixels=28 * 28)


def make_env(policy: ToolDialectPolicy) -> gym.Env[Any, Any]:
    kwargs = dict(policy.env_kwargs["tools"])
    overrides = {} if kwargs["preset"] in ("framethinker", "video-mtr") else {
        "preview": SMALL_PREVIEW
    }  # fmt: skip
    return gym.make("VideoEnv/Tools-v1", dataset="synth-tiny", overrides=overrides, **kwargs)


def play(preset: str, replies: Sequence[str]) -> tuple[dict[str, Any], ScriptedChat]:
    chat = ScriptedChat(replies)
    policy = ToolDialectPolicy(chat, preset)
    record = run_episode(make_env(policy), policy, seed=0, options={"index": 0})
    return record, chat


def parts(message: VisionMessage) -> list[Any]:
    content = message["content"]
    return [content] if isinstance(content, str) else list(content)


def texts(message: VisionMessage) -> str:
    return "".join(p for p in parts(message) if isinstance(p, str))


def test_the_scripted_double_is_a_vision_chat() -> None:
    assert isinstance(ScriptedChat([]), VisionChat)
    with pytest.raises(ConfigError, match="VisionChat"):
        ToolDialectPolicy(object(), "longvt")  # type: ignore[arg-type]
    with pytest.raises(UnknownNameError):
        ToolDialectPolicy(ScriptedChat([]), "videoseek")


@pytest.mark.parametrize("preset", sorted(DIALECTS))
def test_a_literal_reply_drives_the_episode_to_an_answer(preset: str) -> None:
    record, chat = play(preset, REPLIES[preset])
    assert record["error"] is None, record["error"]
    assert record["ended_by"] == "answer" and record["answer"] == "A"
    assert sum(record["tool_calls"].values()) == 1 and record["invalid_actions"] == 0
    assert len(chat.calls) == 2 and record["llm_calls"] == 2
    first, second = chat.calls
    assert first[0]["role"] == "system" and second[0] == first[0]
    assert "Which object is placed on the bookshelf?" in texts(first[-1])
    result_turn = second[-1]
    frames = [p for p in parts(result_turn) if isinstance(p, FrameBatch)]
    assert frames and all(len(f) == 1 for f in frames)  # each frame an image
    label = LABELS[preset]
    if label is not None:  # each image follows its label
        items = parts(result_turn)
        for i, part in enumerate(items):
            if isinstance(part, FrameBatch):
                assert isinstance(items[i - 1], str) and label.split("0")[0] in items[i - 1]
        assert label in texts(result_turn)


def test_longvt_speaks_hermes_and_reports_the_crop() -> None:
    _, chat = play("longvt", REPLIES["longvt"])
    system = str(chat.calls[0][0]["content"])
    assert system.startswith("You are a helpful assistant.\n\n# Tools\n")
    assert '"name": "crop_video"' in system and "<tools>\n" in system
    assert "Think first, call **crop_video** if needed, then answer." in texts(chat.calls[0][1])
    result = texts(chat.calls[1][-1])
    assert result.startswith("<tool_response>\n")
    assert "Cropped 10.0s-20.0s, got 10 frames." in result  # 1 fps over 10 s
    assert chat.calls[1][2]["content"] == REPLIES["longvt"][0]  # the reply, kept


def test_videozoomer_cuts_at_its_stop_and_warns_before_the_last_round() -> None:
    zoom = '<think>.</think><video_zoom> {"segment": [4.0, 6.0], "fps": 2} </video_zoom>'
    record, chat = play("videozoomer", [zoom + " tail"] * 4 + ["<answer>A</answer>"])
    assert record["ended_by"] == "answer"
    assert chat.calls[1][2]["content"] == zoom  # generation stops at </video_zoom>
    assert "<frame0_time" in texts(chat.calls[0][1])  # the preview, labelled too
    last = texts(chat.calls[-1][-1])
    assert last.endswith("give a final answer based on information above.")
    assert "Do not call" not in texts(chat.calls[-2][-1])


def test_timesearch_r_stamps_each_frame_and_lists_the_times() -> None:
    _, chat = play("timesearch-r", REPLIES["timesearch-r"])
    system = str(chat.calls[0][0]["content"])
    assert system.startswith("You are a helpful video assistant.\n# Tools\n")
    opening = parts(chat.calls[0][1])
    assert isinstance(opening[0], FrameBatch) and len(opening[0]) == 8  # the preview video
    assert "Answer with the option's letter" in texts(chat.calls[0][1])
    assert "maximum of 8 rounds" in texts(chat.calls[0][1])
    items = parts(chat.calls[1][-1])
    stamps = [items[i - 1] for i, p in enumerate(items) if isinstance(p, FrameBatch)]
    assert len(stamps) == 4 and all(s.endswith("s") and float(s[:-1]) >= 10 for s in stamps)
    assert f"They are located at {','.join(stamps)}." in texts(chat.calls[1][-1])


def test_framethinker_numbers_frames_by_native_index() -> None:
    _, chat = play("framethinker", REPLIES["framethinker"])
    assert "currently 8." in str(chat.calls[0][0]["content"])  # 193 s: 8 frames
    opening = texts(chat.calls[0][1])
    assert opening.startswith("Which object is placed on the bookshelf?\nA. ")
    assert "frame 0:" in opening
    labels = [p for p in parts(chat.calls[1][-1]) if isinstance(p, str)]
    numbers = [int(label.split()[1].rstrip(":")) for label in labels]
    assert all(30 < n < 300 for n in numbers) and numbers == sorted(numbers)


def test_framethinker_shows_the_time_lookup_as_text() -> None:
    replies = [
        "<action>get frame number at time 00:05</action>",
        "<action>output answer: A</action>",
    ]
    record, chat = play("framethinker", replies)
    assert record["ended_by"] == "answer"
    assert texts(chat.calls[1][-1]).startswith("Frame number at time 00:05 is: ")


def test_video_mtr_lists_pool_indices_and_keeps_two_past_turns() -> None:
    replies = ["<think>.</think><retrieve>5,10</retrieve>", "no tags", "<answer>A</answer>"]
    record, chat = play("video-mtr", replies)
    assert record["ended_by"] == "answer" and record["invalid_actions"] == 1
    first = texts(chat.calls[0][1])
    assert "\nTurn 1\nNow you are given 16 selected frames" in first
    assert "frame_idx_list: [0, 4, 8," in first and "smaller than 63." in first
    assert "Options: ['A. " in first
    second = texts(chat.calls[1][-1])
    assert "frame_idx_list: [5, 6, 7, 8, 9, 10]" in second and "Turn 2" in second
    third = texts(chat.calls[2][-1])
    assert third.startswith("Your response in the previous turn is invalid: ")
    assert "observe the given frames in the previous turn" in third
    assert "You must provide your final answer now." in third  # the last of 3 turns
    assert len(chat.calls[2]) == 1 + 4 + 1  # system, two past exchanges, the turn


def test_a_bad_reply_is_an_invalid_action_the_chat_is_told_about() -> None:
    chat = ScriptedChat(["<video_zoom>not json</video_zoom>"])
    policy = ToolDialectPolicy(chat, "longvt")
    env = make_env(policy)
    obs, info = env.reset(seed=0, options={"index": 0})
    chat.replies = ["I think it is A"]
    action = policy.act(obs, info)
    assert isinstance(action, InvalidAction)
    obs, *_, info = env.step(action)
    chat.replies = ["<answer>A</answer>"]
    policy.act(obs, info)
    assert texts(chat.calls[-1][-1]).startswith("<tool_response>\nError: no tool call")


def test_registered_as_families_that_need_a_model() -> None:
    for preset in DIALECTS:
        assert f"{preset}-vlm:ARG" in policies.registry.parameterised()
        assert f"{preset}-vlm" not in policies.available()
        with pytest.raises(ConfigError, match="needs a model"):
            policies.make(f"{preset}-vlm:transformers")
    with pytest.raises(ConfigError, match="unknown VLM spec"):
        policies.make("longvt-vlm:nope:x")


def test_pixel_observations_are_required() -> None:
    policy = ToolDialectPolicy(ScriptedChat(["<answer>A</answer>"]), "videozoomer")
    env = gym.make("VideoEnv/Tools-v1", preset="videozoomer", dataset="synth-tiny")
    obs, info = env.reset(seed=0)
    with pytest.raises(ConfigError, match="pixel_observations"):
        policy.act(obs, info)
    assert np.isfinite(info["video_fps"])
