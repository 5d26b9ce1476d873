"""OpenAIVLM against the local fake OpenAI server: images, logprobs, confidence, failures."""

from __future__ import annotations

import io
import math
from typing import Any

import pytest

pytest.importorskip("openai")
pytest.importorskip("tenacity")

from PIL import Image

from video_env.backends.base import VLM, Captioner, FrameBatch, VisionChat
from video_env.backends.llm.failures import LLMCallError
from video_env.backends.llm.testing import (
    FakeOpenAIServer,
    chat_reply,
    error_reply,
    request_images,
)
from video_env.backends.openai_vlm import OpenAIVLM
from video_env.envs.perception import Perception
from video_env.errors import BackendError
from video_env.synth import load_suite
from video_env.types import Interval, VideoQA
from video_env.video.base import Size


@pytest.fixture(scope="module")
def sample() -> VideoQA:
    return next(s for s in load_suite("synth-tiny") if s.options)


@pytest.fixture
def server() -> Any:
    with FakeOpenAIServer() as fake:
        yield fake


def make(server: FakeOpenAIServer, **kw: Any) -> OpenAIVLM:
    settings: dict[str, Any] = {"max_retries": 3, "backoff_s": (0.0, 0.01), "timeout_s": 5.0}
    return OpenAIVLM("qwen-vl", base_url=server.base_url, **{**settings, **kw})


def test_protocols_and_config(server: FakeOpenAIServer) -> None:
    vlm = make(server)
    assert isinstance(vlm, VLM) and isinstance(vlm, Captioner) and isinstance(vlm, VisionChat)
    assert vlm.simulated is False and vlm.name == "openai:qwen-vl"
    assert vlm.config["jpeg_quality"] == 90 and vlm.config["confidence"] == "falconeye"


def test_frames_arrive_as_jpeg_data_urls_of_the_batch_size(
    server: FakeOpenAIServer, sample: VideoQA
) -> None:
    vlm = make(server, jpeg_quality=80)
    batch = FrameBatch.sample(sample.video, Interval(5, 35), 3, (96, 64))
    server.script(chat_reply("B", logprobs=[-0.1], tokens=["B"]))
    vlm.answer(batch, sample.question, sample.options)
    request = server.requests[-1]
    images = request_images(request)
    assert len(images) == len(batch) == 3
    for media, data in images:
        image = Image.open(io.BytesIO(data))
        assert media == "image/jpeg" and image.format == "JPEG"
        assert Size(*image.size) == batch.size == Size(96, 54)
    body = request.body
    assert body["logprobs"] is True and body["top_logprobs"] == 5
    assert body["temperature"] == 0 and body["max_tokens"] == 64  # FALCON-Bench MCQ cap
    user = body["messages"][1]["content"]
    assert user[0]["type"] == "text" and "A. " in user[0]["text"]
    assert body["messages"][0] == {"role": "system", "content": "You are a helpful assistant."}


def test_confidence_equals_the_hand_computation(server: FakeOpenAIServer, sample: VideoQA) -> None:
    vlm = make(server)
    batch = FrameBatch.sample(sample.video, Interval(0, 10), 2, (56, 56))
    # open: geometric mean of each step's top-1 probability (an alternative may beat the
    # chosen token when the server samples)
    lps = [-0.2, -0.7, -0.05]
    tops = [[("Red", -0.2)], [(" car", -0.6), (" van", -0.7)], [(".", -0.05)]]
    server.script(
        chat_reply("Red van.", logprobs=lps, tokens=["Red", " van", "."], top_logprobs=tops)
    )
    answer = vlm.answer(batch, sample.question)
    top1 = [math.exp(-0.2), math.exp(-0.6), math.exp(-0.05)]
    assert answer.confidence == round(math.prod(top1) ** (1 / 3), 3)
    assert answer.token_probs == pytest.approx(top1)
    # MCQ: the probability of the single option-letter token
    server.script(chat_reply("C.", logprobs=[-0.3, -0.01], tokens=["C", "."]))
    assert vlm.answer(batch, sample.question, sample.options).confidence == round(math.exp(-0.3), 3)
    # MCQ zero cases: two letters; more than 5 tokens; no letter token
    server.script(chat_reply("C D", logprobs=[-0.1, -0.1], tokens=["C", "D"]))
    assert vlm.answer(batch, sample.question, sample.options).confidence == 0.0
    six = ["C", ".", " It", " is", " C", "."]
    server.script(chat_reply("C. It is C.", logprobs=[-0.1] * 6, tokens=six))
    assert vlm.answer(batch, sample.question, sample.options).confidence == 0.0
    server.script(chat_reply("hourglass", logprobs=[-0.1], tokens=["hourglass"]))
    assert vlm.answer(batch, sample.question, sample.options).confidence == 0.0
    assert vlm.usage.vlm_calls == 5 and vlm.usage.frames == 10


def test_no_logprobs_is_a_clear_error_and_verbal_works_without(
    server: FakeOpenAIServer, sample: VideoQA
) -> None:
    batch = FrameBatch.sample(sample.video, Interval(0, 10), 1, (56, 56))
    server.script(chat_reply("B"))
    with pytest.raises(BackendError, match=r"no logprobs.*confidence='verbal'"):
        make(server).answer(batch, sample.question, sample.options)
    verbal = make(server, confidence="verbal")
    server.script(chat_reply("B\nConfidence: 70"))
    answer = verbal.answer(batch, sample.question, sample.options)
    assert (answer.text, answer.confidence) == ("B", 0.7)
    body = server.requests[-1].body
    assert "logprobs" not in body and "Confidence: N" in body["messages"][1]["content"][0]["text"]


def test_caption_chat_and_batch(server: FakeOpenAIServer, sample: VideoQA) -> None:
    vlm = make(server)
    batch = FrameBatch.sample(sample.video, Interval(0, 60), 2, (56, 56))
    server.script(chat_reply("A person walks by a red door."))
    assert vlm.caption(batch, max_tokens=16) == "A person walks by a red door."
    body = server.requests[-1].body
    assert (
        body["max_tokens"] == 16 and "15 words maximum" in body["messages"][1]["content"][0]["text"]
    )
    server.script(chat_reply("A kitchen with white cabinets; a woman reads a red sign."))
    vlm.caption(batch, max_tokens=192, style="detailed")  # VideoAgent's frame captions
    text = server.requests[-1].body["messages"][1]["content"][0]["text"]
    assert "in detail" in text and "15 words" not in text
    server.script(chat_reply("<action>speed(2x)</action>"))
    reply = vlm.chat(
        [{"role": "system", "content": "Be an agent."}, {"role": "user", "content": ["See", batch]}]
    )
    assert reply.text == "<action>speed(2x)</action>" and reply.prompt_tokens == 11
    assert len(request_images(server.requests[-1])) == 2
    server.script(*[chat_reply(x, logprobs=[-0.1], tokens=[x]) for x in "ABC"])
    answers = vlm.answer_batch([batch, batch, batch], sample.question, sample.options)
    assert sorted(a.text for a in answers) == ["A", "B", "C"]  # three requests in flight
    assert vlm.usage.caption_calls == 2 and vlm.usage.vlm_calls == 4


def test_a_429_5xx_storm_is_retried_then_recorded_and_the_benchmark_goes_on(
    server: FakeOpenAIServer, sample: VideoQA
) -> None:
    from policies import make as make_policy
    from policies.runner import run_episode
    from video_env.envs.zoom import ZoomEnv
    from video_env.envs.zoom_rules import ZoomRules

    vlm = make(server, max_retries=2)
    batch = FrameBatch.sample(sample.video, Interval(0, 10), 1, (56, 56))
    server.script(
        error_reply(429), error_reply(503), chat_reply("B", logprobs=[-0.1], tokens=["B"])
    )
    assert vlm.answer(batch, sample.question, sample.options).text == "B"  # retried
    server.script(*[error_reply(500)] * 3)
    with pytest.raises(LLMCallError, match="after 3 attempts"):
        vlm.answer(batch, sample.question, sample.options)

    rules = ZoomRules(short_pixels=56 * 56, long_pixels=56 * 56, max_frames=2)
    env = ZoomEnv([sample], perception=Perception(vlm=vlm, captioner=vlm), rules=rules)
    policy = make_policy("uniform")
    server.script(*[error_reply(429)] * 3)  # the first caption at reset fails for good
    failed = run_episode(env, policy, seed=0)
    assert failed["error"] and "429" in failed["error"] and failed["correct"] is False
    ok = run_episode(env, policy, seed=1)  # the default reply: "ok" without logprobs...
    assert ok["error"] and "no logprobs" in ok["error"]  # ...recorded, not raised
    n_clips = len(rules.clips(sample.video.duration))
    answer = chat_reply("B", logprobs=[-0.1], tokens=["B"])
    server.script(*[chat_reply("caption")] * n_clips, answer)
    good = run_episode(env, policy, seed=2)
    assert good["error"] is None and good["vlm_calls"] == 1


def test_missing_or_malformed_usage_is_estimated(server: FakeOpenAIServer, sample: VideoQA) -> None:
    from video_env.backends.llm.testing import FakeReply

    vlm = make(server)
    batch = FrameBatch.sample(sample.video, Interval(0, 10), 1, (56, 56))
    body = chat_reply("B", logprobs=[-0.1], tokens=["B"]).body
    body["usage"] = {"prompt_tokens": "lots", "completion_tokens": -3, "total_tokens": None}
    server.script(
        FakeReply(body=body), chat_reply("B", logprobs=[-0.1], tokens=["B"], prompt_tokens=None)
    )
    for _ in range(2):
        answer = vlm.answer(batch, sample.question, sample.options)
        assert answer.text == "B" and answer.n_visual_tokens == 0  # text-only estimate
    assert vlm.usage.vlm_calls == 2


def test_a_paid_vlm_spend_reaches_the_episode_record(
    server: FakeOpenAIServer, sample: VideoQA
) -> None:
    from policies import make as make_policy
    from policies.runner import run_episode
    from video_env.envs.zoom import ZoomEnv
    from video_env.envs.zoom_rules import ZoomRules

    vlm = make(server, prices={"qwen-vl": (1_000_000.0, 0.0)})  # $1 per prompt token
    rules = ZoomRules(short_pixels=56 * 56, long_pixels=56 * 56, max_frames=2)
    env = ZoomEnv([sample], perception=Perception(vlm=vlm, captioner=vlm), rules=rules)
    n_clips = len(rules.clips(sample.video.duration))
    server.script(
        *[chat_reply("caption", prompt_tokens=10)] * n_clips,
        chat_reply("B", logprobs=[-0.1], tokens=["B"], prompt_tokens=7),
    )
    record = run_episode(env, make_policy("uniform"), seed=0)
    assert record["error"] is None
    spent = 10.0 * n_clips + 7.0
    assert record["perception_money_usd"] == pytest.approx(spent)
    assert record["money_usd"] == pytest.approx(spent)  # the offline policy pays nothing
