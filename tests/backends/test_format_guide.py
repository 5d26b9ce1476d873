"""Format-guided decoding: reply patterns, the Think-Act pattern, VideoScout's whole-reply guide."""

from __future__ import annotations

from typing import Any

import pytest

from policies import run_episode
from policies.videoscout import VideoScoutPolicy
from policies.videoscout.think_act_pattern import think_act_pattern
from tests.backends.test_reply_guide import SpeedLovingChat
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
    for partial in ({"after": "</m>"}, {"after": "", "open": ("<b>",)}):
        with pytest.raises(ValueError, match="whole reply"):
            ReplyGuide(**partial, patterns=(r"<a>[a-z]</a>",))  # type: ignore[arg-type]
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


def _masked(processor: Any, rows: list[list[int]], vocab_size: int) -> list[set[int]]:
    """The token ids each row may take next (rows of equal length, no prompt)."""
    import torch

    scores = processor(torch.tensor(rows, dtype=torch.long), torch.zeros(len(rows), vocab_size))
    return [set(torch.nonzero(row > float("-inf")).flatten().tolist()) for row in scores]


def test_pattern_masks_allow_exactly_the_tokens_that_stay_on_the_pattern() -> None:
    from video_env.backends.hf_guide import GuideLogitsProcessor
    from video_env.backends.testing import tiny_qwen_tokenizer

    tokenizer = tiny_qwen_tokenizer()
    eos = tokenizer.eos_token_id
    guide = ReplyGuide("", patterns=(think_act_pattern(SPEEDS + LETTERS, open_answer=False,
                                                       max_chars=20),))  # fmt: skip
    texts = {i: tokenizer.decode([i]) for i in range(len(tokenizer))}
    special = set(tokenizer.all_special_ids)
    reply = "<think>B (red): here.</think><memory>Seen.</memory>" + LETTERS[1]
    ids = tokenizer(reply, add_special_tokens=False)["input_ids"]
    processor = GuideLogitsProcessor(guide, tokenizer, 0, [eos])
    for k in range(len(ids) + 1):  # one row grows a token a call, as generate calls it
        (allowed,) = _masked(processor, [ids[:k]], len(tokenizer))
        prefix = tokenizer.decode(ids[:k])
        by_text = {
            i for i, text in texts.items()
            if i not in special and text.isascii() and guide.allows(prefix + text)
        }  # fmt: skip
        ended = guide.state(prefix) == ("end", None)
        assert allowed == (by_text | {eos} if ended else by_text), prefix
    assert _masked(processor, [[*ids, eos, eos]], len(tokenizer)) == [{eos}], "ended: EOS only"


def test_pattern_masks_keep_one_matcher_per_row_and_refuse_what_they_cannot_follow() -> None:
    from video_env.backends.hf_guide import GuideLogitsProcessor
    from video_env.backends.testing import tiny_qwen_tokenizer

    tokenizer = tiny_qwen_tokenizer()
    eos, width = tokenizer.eos_token_id, len(tokenizer) + 7  # logits wider than the vocabulary
    guide = ReplyGuide("", closed=("<a>",), patterns=(r"<b>[a-z]{0,2}</b>",))
    a, b = (tokenizer("<a>", add_special_tokens=False)["input_ids"],
            tokenizer("<b>", add_special_tokens=False)["input_ids"])  # fmt: skip
    assert len(a) == len(b), "rows of equal length"
    prompt = [eos, eos]
    processor = GuideLogitsProcessor(guide, tokenizer, len(prompt), [eos])
    after_a, after_b = _masked(processor, [prompt + a, prompt + b], width)
    assert after_a == {eos}, "a closed head ends the reply"
    assert eos not in after_b and all(tokenizer.decode([i]).strip() for i in after_b)
    assert not any(i >= len(tokenizer) for i in after_a | after_b), "no padding logits"
    letter = tokenizer("x", add_special_tokens=False)["input_ids"]
    assert len(letter) == 1 and set(letter) <= after_b
    # the next step: row a ended (EOS, as generate pads), row b goes on: each keeps its place
    ended, going = _masked(processor, [prompt + a + [eos], prompt + b + letter], width)
    assert ended == {eos} and eos not in going and going < after_b
    capped = _masked(processor, [prompt + a + [eos, eos], prompt + b + letter * 2], width)[1]
    special = set(tokenizer.all_special_ids)
    closing = {
        i for i in range(len(tokenizer))
        if i not in special and guide.allows("<b>xx" + tokenizer.decode([i]))
    }  # fmt: skip
    assert capped == closing and closing and not closing & set(letter), "the cap of 2 letters"
    off = tokenizer("<c>", add_special_tokens=False)["input_ids"]
    with pytest.raises(ValueError, match="leaves the pattern"):
        _masked(GuideLogitsProcessor(guide, tokenizer, 0, [eos]), [off], width)
    for by_text in (processor.allowed, processor.banned):
        with pytest.raises(ValueError, match="not by text"):
            by_text("<b>")
    lookahead = ReplyGuide("", patterns=(r"(?=a)a",))  # the regex package reads it
    with pytest.raises(ValueError, match="grammar engine"):
        _masked(GuideLogitsProcessor(lookahead, tokenizer, 0, [eos]), [[]], width)


def test_scoring_masks_are_the_sampling_masks_at_every_position() -> None:
    import torch

    from video_env.backends.hf_pattern_guide import PatternMasks, pattern_masked_logits
    from video_env.backends.testing import tiny_qwen_tokenizer

    tokenizer = tiny_qwen_tokenizer()
    eos, width = tokenizer.eos_token_id, len(tokenizer)
    guide = ReplyGuide("", patterns=(think_act_pattern(SPEEDS, open_answer=True,
                                                       max_chars=20),))  # fmt: skip
    reply = '<think>red.</think><memory>Seen.</memory><action>answer("red")</action>'
    ids = [*tokenizer(reply, add_special_tokens=False)["input_ids"], eos]
    logits = torch.randn(len(ids), width, requires_grad=True)
    scored = pattern_masked_logits(logits, tokenizer, guide.regex(), ids, [eos])
    for j in range(len(ids)):
        sampled = _masked(PatternMasks(guide, tokenizer, [eos]), [ids[:j]], width)[0]
        assert set(torch.nonzero(scored[j] > float("-inf")).flatten().tolist()) == sampled
    scored.log_softmax(-1).gather(-1, torch.tensor(ids)[:, None]).sum().backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all()
    cut = [*ids[:5], eos]  # cut by the token cap, then its end-of-turn token
    free = pattern_masked_logits(logits[: len(cut)], tokenizer, guide.regex(), cut, [eos])
    assert torch.equal(free[-1], logits[len(cut) - 1]) and free[0].isinf().any()


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
