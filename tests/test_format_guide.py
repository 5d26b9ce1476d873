"""Format-guided decoding: reply patterns, the Think-Act pattern, VideoScout's whole-reply guide."""

from __future__ import annotations

from typing import Any

import pytest

from policies import run_episode
from policies.think_act_pattern import think_act_pattern
from policies.videoscout import VideoScoutPolicy
from tests.test_reply_guide import ListTokenizer, SpeedLovingChat
from video_env.backends.base import ReplyGuide
from video_env.envs import PacingEnv
from video_env.errors import ConfigError
from video_env.wrappers.text_actions import parse_text_action

SPEEDS = ["<action>speed(2x)</action>", "<action>speed(4x)</action>"]
LETTERS = ['<action>answer("A")</action>', '<action>answer("B")</action>']


def test_a_pattern_guide_keeps_to_prefixes_of_a_match_and_ends_at_one() -> None:
    guide = ReplyGuide("", patterns=(r"<a>[a-z]{0,3}</a>",))
    assert guide.state("<a>x") == ("guided", "<a>x")
    assert guide.allows("") and guide.allows("<a>ab") and guide.allows("<a>ab</")
    assert not guide.allows("<b") and not guide.allows("<a>abcd"), "past the cap"
    assert guide.state("<a>ab</a>") == ("end", None)
    assert not guide.allows("<a>ab</a>!"), "nothing past a full match"
    assert guide.next_chars("<a>") is None, "any character may go on"
    assert not guide.allows(" "), "without a marker, the first character is on a path"
    marked = ReplyGuide("</m>", patterns=(r"<a>[a-z]</a>",))
    assert marked.state("x</m>\n<a>b</a>") == ("end", None), "blanks after a marker pass"
    with pytest.raises(ValueError, match="regular expression"):
        ReplyGuide("", patterns=("<a>(",))


def test_the_think_act_pattern_takes_teacher_replies_and_refuses_broken_ones() -> None:
    pattern = think_act_pattern(SPEEDS + LETTERS, open_answer=False, max_chars=40)
    mcq = ReplyGuide("", patterns=(pattern,))
    good = "<think>B (purple): I see it.</think><memory>Seen: lab.</memory>" + LETTERS[1]
    assert mcq.state(good) == ("end", None)
    assert mcq.state("<think>t</think><memory></memory><action>speed(4x)</action>")[0] == "end"
    for broken in (
        "<action>",  # the bare action a student writes after an invalid reply
        "<think>B (x)<think>",  # a tag inside the thought
        "<think>" + "a " * 21,  # past the cap of 40 characters
        "<think>caf\u00e9",  # printable ASCII only (token texts join exactly there)
        " <think>",  # no blanks first
        "<think>t</think><memory>m</memory><action>speed(1x)",  # not a legal speed here
        '<think>t</think><memory>m</memory><action>answer("C")',  # not an option
    ):
        assert not mcq.allows(broken), broken
    open_question = ReplyGuide(
        "", patterns=(think_act_pattern(SPEEDS, open_answer=True, max_chars=40),)
    )
    head = "<think>white</think><memory>Seen: lab.</memory>"
    assert open_question.state(head + '<action>answer("white")</action>')[0] == "end"
    assert open_question.state(head + '<action>answer("Bob 2")</action>')[0] == "end"
    assert not open_question.allows(head + '<action>answer("B"'), "an option letter"
    assert not open_question.allows(head + '<action>answer("B ')
    assert not open_question.allows(head + '<action>answer("")')
    assert not open_question.allows(head + '<action>answer("red", [1'), "the env's window"
    assert not open_question.allows(head + '<action>answer("red [1'), "no window in the text"
    with pytest.raises(ValueError, match="legal action"):
        think_act_pattern([], open_answer=False, max_chars=10)
    with pytest.raises(ValueError, match="max_chars"):
        think_act_pattern(SPEEDS, open_answer=False, max_chars=0)


def test_the_logits_processor_tries_every_token_under_a_pattern() -> None:
    from video_env.backends.hf_guide import GuideLogitsProcessor

    vocab = ["<eos>", "<think>", "<th", "ink>", "<action>", "x", "</think>", "!"]
    guide = ReplyGuide("", patterns=(r"<think>x{0,2}</think>",))
    processor = GuideLogitsProcessor(guide, ListTokenizer(vocab), 0, [0])
    assert sorted(processor.allowed("") or []) == [1, 2]
    assert sorted(processor.allowed("<think>") or []) == [5, 6]
    assert processor.allowed("<think>xx") == [6], "the cap closes the thought"
    assert processor.allowed("<think>x</think>") == [0]
    marked = ReplyGuide("</m>", patterns=(r"<a>x</a>",))
    vocab = ["<eos>", "</", "m>", "m>x", "m><a>", "<a>"]
    processor = GuideLogitsProcessor(marked, ListTokenizer(vocab), 0, [0])
    assert processor.banned("t</") == [vocab.index("m>x")], "completing the marker, off the path"
    assert processor.allowed("t</m>") == [5]


def test_format_guided_videoscout_guides_the_whole_reply_with_the_turns_actions() -> None:
    policy = VideoScoutPolicy(SpeedLovingChat(), format_guided=True, format_chars=50)
    assert policy.name.endswith("+format-guided")
    env = PacingEnv("synth-tiny", **policy.env_kwargs["pacing"])
    obs, info = env.reset(seed=0, options={"index": 0})
    guide = policy.reply_guide(obs, info)
    assert guide.after == "" and guide.closed == () and len(guide.patterns) == 1
    reply = '<think>t</think><memory>m</memory><action>answer("A")</action>'
    assert guide.state(reply) == ("end", None)
    assert guide.allows("<think>" + "a" * 50) and not guide.allows("<think>" + "a" * 51)
    ended = policy.reply_guide(obs, {**info, "legal_actions": ["answer"]})
    assert not ended.allows("<think>t</think><memory>m</memory><action>sp")
    open_question = policy.reply_guide(
        {**obs, "options": ""}, {**info, "legal_actions": ["answer"]}
    )
    open_reply = '<think>t</think><memory>m</memory><action>answer("red")</action>'
    assert open_question.state(open_reply) == ("end", None)
    assert not open_question.allows('<think>t</think><memory>m</memory><action>answer("A"')
    with pytest.raises(ConfigError, match="format_chars"):
        VideoScoutPolicy(SpeedLovingChat(), format_guided=True, format_chars=0)


def test_format_guided_generation_of_a_random_model_is_always_a_legal_think_act_reply(
    tiny_qwen_dir: str,
) -> None:
    from video_env.backends.transformers_vlm import TransformersVLM

    vlm = TransformersVLM(tiny_qwen_dir, device="cpu")
    policy = VideoScoutPolicy(vlm, format_guided=True, format_chars=6, max_new_tokens=120,
                              temperature=1.0)  # fmt: skip
    env = PacingEnv("synth-tiny", **policy.env_kwargs["pacing"])
    record: dict[str, Any] = run_episode(env, policy, seed=0, options={"index": 0}, max_steps=4)
    assert record["invalid_actions"] == 0, policy.last_reply
    assert policy.last_reply.lstrip().startswith("<think>"), "whitespace before it is passed over"
    parse_text_action(policy.action_set, policy.last_reply, True)  # strict: the exact format
