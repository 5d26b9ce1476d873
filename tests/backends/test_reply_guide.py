"""Guided decoding: ReplyGuide, its transformers logits processor, VideoScout's legal actions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from policies import run_episode
from policies.observations import parse_options
from policies.videoscout import VideoScoutPolicy
from video_env.backends.base import ReplyGuide, VisionMessage
from video_env.backends.llm.base import Completion
from video_env.envs import PacingEnv
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost

SPEEDS = ("<action>speed(2x)</action>", "<action>speed(4x)</action>")
ANSWERS = ('<action>answer("A", [', '<action>answer("B", [')


def test_a_guide_is_free_before_its_marker_then_keeps_to_its_heads() -> None:
    guide = ReplyGuide("</memory>", closed=SPEEDS, open=ANSWERS)
    assert guide.state("<think>x</think><memory>m") == ("free", None)
    assert guide.state("<think>x</think><memory>m</memory><act") == ("guided", "<act")
    assert guide.state("<memory>m</memory><action>speed(4x)</action>") == ("end", None)
    assert guide.state('<memory>m</memory><action>answer("B", [3, 9])') == ("free", None)
    assert guide.allows("<action>sp") and guide.allows('<action>answer("A", [1')
    assert not guide.allows("<action>speed(1") and not guide.allows("<action>answer(C")
    assert not guide.allows("<action>speed(2x)</action>!"), "nothing past a closed head"
    assert ReplyGuide("", closed=SPEEDS).state("") == ("guided", "")  # guided from the start
    with pytest.raises(ValueError, match="at least one"):
        ReplyGuide("</memory>")


def test_the_logits_processor_allows_only_tokens_on_the_guides_paths() -> None:
    from video_env.backends.hf_guide import GuideLogitsProcessor
    from video_env.backends.testing import tiny_qwen_tokenizer

    tokenizer = tiny_qwen_tokenizer()
    guide = ReplyGuide("</memory>", closed=SPEEDS, open=ANSWERS)
    processor = GuideLogitsProcessor(guide, tokenizer, 0, [0])
    assert processor.allowed("<think>x") is None  # free before the marker
    assert processor.allowed("</memory><action>speed(2x)</action>") == [0]  # then only the end
    allowed = processor.allowed("</memory><action>")
    assert allowed, "the tokenizer spells the heads"
    texts = {tokenizer.decode([i]) for i in allowed}
    assert all(guide.allows("<action>" + t) for t in texts)
    assert any(t.startswith("s") for t in texts) and any(t.startswith("a") for t in texts)


def test_guided_generation_of_a_random_model_ends_in_a_legal_head(tiny_qwen_dir: str) -> None:
    from video_env.backends.transformers_vlm import TransformersVLM

    vlm = TransformersVLM(tiny_qwen_dir, device="cpu")
    messages: list[VisionMessage] = [{"role": "user", "content": "Where next?"}]
    free = vlm.chat(messages, max_new_tokens=12)
    assert free.text not in SPEEDS  # a random model writes noise
    guide = ReplyGuide("", closed=SPEEDS, open=ANSWERS)
    for temperature in (0.0, 1.0, 1.0, 1.0):
        reply = vlm.chat(messages, max_new_tokens=40, temperature=temperature, guide=guide)
        assert reply.text in SPEEDS or reply.text.startswith(ANSWERS), reply.text
        if reply.text in SPEEDS:
            assert reply.finish_reason == "stop"
    # a marker the model never writes leaves its reply as it was
    unmarked = ReplyGuide("<never-written>", closed=SPEEDS)
    assert vlm.chat(messages, max_new_tokens=12, guide=unmarked).text == free.text


class SpeedLovingChat:
    """A model that always wants ``speed(2x)`` — as the pixel students do at the video's end —
    and, given a guide, writes the first legal continuation instead (a stand-in for masking).
    """

    name = "speed-loving"
    simulated = True
    accepts_guide = True
    #: The action it always wants to write (a subclass may want another).
    wanted = "<action>speed(2x)</action>"

    def __init__(self) -> None:
        self.usage = Cost()
        self.guides: list[ReplyGuide | None] = []

    def chat(
        self, messages: Sequence[VisionMessage], *, max_new_tokens: int = 512,
        temperature: float = 0.0, guide: ReplyGuide | None = None,
    ) -> Completion:  # fmt: skip
        self.guides.append(guide)
        head = "<think>Skim.</think><memory>Seen: a park.</memory>"
        wanted = self.wanted
        if guide is not None and not guide.allows(wanted):
            choices = (*guide.closed, *(h + "0, 5])</action>" for h in guide.open))
            wanted = choices[0] if guide.closed else choices[-1]
        return Completion(text=head + wanted, model="x", prompt_tokens=10, completion_tokens=5)


def test_legal_action_decoding_lets_videoscout_answer_where_only_answer_is_legal() -> None:
    records: dict[bool, dict[str, Any]] = {}
    for guided in (False, True):
        chat = SpeedLovingChat()
        policy = VideoScoutPolicy(chat, guided=guided)
        env = PacingEnv("synth-tiny", **policy.env_kwargs["pacing"])
        records[guided] = run_episode(env, policy, seed=0, options={"index": 0})
        assert all((g is not None) == guided for g in chat.guides)
    assert records[False]["ended_by"] == "invalid_actions"  # speed at the end, until the cap
    assert records[True]["ended_by"] == "answer" and records[True]["invalid_actions"] == 0
    assert records[True]["answer"] is not None


def test_the_guide_follows_the_turns_legal_actions() -> None:
    policy = VideoScoutPolicy(SpeedLovingChat(), guided=True)
    env = PacingEnv("synth-tiny", **policy.env_kwargs["pacing"])
    obs, info = env.reset(seed=0, options={"index": 0})
    guide = policy.reply_guide(obs, info)
    assert guide.after == "</memory>"
    speeds = [f"<action>speed({f}x)</action>" for f in (1, 2, 4)]
    letters = "ABCDEFGH"[: len(parse_options(str(obs["options"])))]
    answers = [f'<action>answer("{letter}")</action>' for letter in letters]
    assert letters and list(guide.closed) == speeds + answers and guide.open == ()
    ended = policy.reply_guide(obs, {**info, "legal_actions": ["answer"]})
    assert list(ended.closed) == answers  # the env takes the window on screen
    first, last = (int(c) for c in obs["chunks"])
    rewatching = policy.reply_guide(obs, {**info, "legal_actions": ["speed", "rewatch", "answer"]})
    assert [h for h in rewatching.closed if "rewatch" in h] == [
        f"<action>rewatch({k})</action>" for k in range(first, last + 1)
    ]
    open_question = policy.reply_guide(
        {**obs, "options": ""}, {**info, "legal_actions": ["answer"]}
    )
    assert open_question.closed == () and open_question.open == ('<action>answer("',)


def test_guided_decoding_needs_a_model_that_takes_a_guide() -> None:
    class Plain(SpeedLovingChat):
        accepts_guide = False

    with pytest.raises(ConfigError, match="guide"):
        VideoScoutPolicy(Plain(), guided=True)
    VideoScoutPolicy(Plain())  # free generation needs nothing


class ListTokenizer:
    """A tokenizer over a fixed list of token texts (id = position)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)

    def __len__(self) -> int:
        return len(self.texts)

    def decode(self, ids: Any, skip_special_tokens: bool = False) -> str:
        return "".join(self.texts[int(i)] for i in ids)


def test_the_marker_may_be_followed_by_whitespace_and_counts_once() -> None:
    guide = ReplyGuide("</memory>", closed=SPEEDS, open=ANSWERS)
    assert guide.state("</memory>\n<act") == ("guided", "<act")
    assert guide.state("</memory>\n") == ("guided", "")
    done = '</memory><action>answer("A", [1, 2])</action></memory>'
    assert guide.state(done) == ("free", None), "a second marker does not restart the guide"


def test_a_token_that_completes_the_marker_and_leaves_the_paths_is_masked() -> None:
    from video_env.backends.hf_guide import GuideLogitsProcessor

    vocab = ["<eos>", "</mem", "ory", "ory>", "ory>x", "ory>\n", "ory><", "<action>", "speed(2x)",
             "</action>", "x", ">"]  # fmt: skip
    guide = ReplyGuide("</memory>", closed=("<action>speed(2x)</action>",))
    processor = GuideLogitsProcessor(guide, ListTokenizer(vocab), 0, [0])
    assert processor.banned("<memory>m</mem") == [vocab.index("ory>x")]
    assert processor.banned("<memory>m") == []  # no token holds the whole marker
    assert processor.allowed("</memory>\n") == [vocab.index("<action>")]
    assert processor.allowed("</memory><action>") == [vocab.index("speed(2x)")]
    assert processor.allowed("</memory><action>speed(2x)</action>") == [0]
    import torch

    scores = torch.zeros(1, len(vocab))
    ids = torch.tensor([[vocab.index("</mem")]])
    masked = processor(ids, scores.clone())
    assert masked[0, vocab.index("ory>x")] == float("-inf") and masked[0, 2] == 0
    with pytest.raises(ValueError, match="end-of-sequence"):
        GuideLogitsProcessor(guide, ListTokenizer(vocab), 0, [])
    unspellable = GuideLogitsProcessor(
        ReplyGuide("", closed=("<zzz>",)), ListTokenizer(vocab), 0, [0]
    )
    with pytest.raises(ValueError, match="no token continues"):
        unspellable.allowed("")


def test_legal_kinds_read_off_the_observation_match_the_envs() -> None:
    from policies.videoscout import legal_kinds

    replies = ["speed(4x)", "rewatch(2)", "speed(1x)", "speed(4x)", "speed(4x)", "speed(4x)"]
    chat = ScriptedReplies(
        [f"<think>t</think><memory>m</memory><action>{a}</action>" for a in replies]
    )
    policy = VideoScoutPolicy(chat)
    env = PacingEnv("synth-tiny", **policy.env_kwargs["pacing"])
    obs, info = env.reset(seed=0, options={"index": 0})
    seen = set()
    while True:
        assert legal_kinds(obs) == info["legal_actions"], obs["chunks"]
        seen.add(tuple(info["legal_actions"]))
        obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
        if terminated or truncated:
            break
    assert ("answer",) in seen and ("speed", "rewatch", "answer") in seen


class ScriptedReplies(SpeedLovingChat):
    """Returns the given replies in order, then answers "A"."""

    def __init__(self, replies: Sequence[str]) -> None:
        super().__init__()
        self.replies = list(replies)

    def chat(self, messages: Sequence[VisionMessage], **kwargs: Any) -> Completion:
        done = '<think>t</think><memory>m</memory><action>answer("A", [0, 5])</action>'
        text = self.replies.pop(0) if self.replies else done
        return Completion(text=text, model="x", prompt_tokens=10, completion_tokens=5)
