"""TransformersVLM on a tiny random Qwen2.5-VL: confidence, batching, frames, envs."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from video_env.backends.base import CLIP, VLM, Captioner, FrameBatch, VisionChat  # noqa: E402
from video_env.backends.simulated import SimulatedCLIP  # noqa: E402
from video_env.backends.transformers_vlm import TransformersVLM  # noqa: E402
from video_env.envs.perception import Perception  # noqa: E402
from video_env.errors import BackendError, ConfigError  # noqa: E402
from video_env.synth import load_suite  # noqa: E402
from video_env.types import Interval, VideoQA  # noqa: E402
from video_env.video.base import Size  # noqa: E402


@pytest.fixture(scope="module")
def vlm(tiny_qwen_dir: str) -> TransformersVLM:
    return TransformersVLM(tiny_qwen_dir, device="cpu", answer_max_tokens=8)


@pytest.fixture(scope="module")
def sample() -> VideoQA:
    return next(s for s in load_suite("synth-tiny") if s.options)


class GenerateSpy:
    """Wraps ``model.generate`` to keep what it returned (the scores the backend read)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.inner = model.generate
        self.outputs: list[Any] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self.inner(*args, **kwargs)
        self.outputs.append((out, kwargs["input_ids"].shape[1]))
        return out


@pytest.fixture
def spy(vlm: TransformersVLM) -> Iterator[GenerateSpy]:
    spy = GenerateSpy(vlm._model)
    vlm._model.generate = spy
    yield spy
    del vlm._model.generate


def hand_top1(out: Any, n_prompt: int, eos: int, row: int = 0) -> tuple[list[int], list[float]]:
    """Generated ids up to the end token (included) and each step's top-1 probability."""
    ids = [int(t) for t in out.sequences[row, n_prompt:]]
    top1 = []
    for i, token in enumerate(ids):
        scores = out.scores[i][row].double().numpy()
        probs = np.exp(scores - scores.max())
        probs /= probs.sum()
        top1.append(float(probs.max()))
        if token == eos:
            break
    return ids[: len(top1)], top1


def end_token(vlm: TransformersVLM) -> int:
    return int(vlm._processor.tokenizer.convert_tokens_to_ids("<|im_end|>"))


def test_protocols(vlm: TransformersVLM) -> None:
    assert isinstance(vlm, VLM) and isinstance(vlm, Captioner) and isinstance(vlm, VisionChat)
    assert not isinstance(vlm, CLIP)
    assert vlm.simulated is False
    assert vlm.config["confidence"] == "falconeye" and vlm.config["dtype"] == "float32"


def test_open_confidence_is_the_geometric_mean_of_top1_probabilities(
    vlm: TransformersVLM, sample: VideoQA, spy: GenerateSpy
) -> None:
    batch = FrameBatch.sample(sample.video, Interval(0, 20), 4, (56, 56))
    answer = vlm.answer(batch, sample.question)
    out, n_prompt = spy.outputs[-1]
    _, top1 = hand_top1(out, n_prompt, end_token(vlm))
    assert answer.token_probs == pytest.approx(top1, abs=1e-6)
    assert answer.confidence == round(math.prod(top1) ** (1 / len(top1)), 3)
    assert 0 < answer.confidence < 1


def test_mcq_confidence_is_zero_for_a_long_reply(
    vlm: TransformersVLM, sample: VideoQA, spy: GenerateSpy
) -> None:
    batch = FrameBatch.sample(sample.video, Interval(0, 20), 4, (56, 56))
    answer = vlm.answer(batch, sample.question, sample.options)
    out, n_prompt = spy.outputs[-1]
    if len(answer.token_probs) <= 5:
        pytest.skip("the random model stopped early")
    assert answer.confidence == 0.0  # > 5 tokens: the reference's zero rule
    assert len(answer.token_probs) == len(hand_top1(out, n_prompt, end_token(vlm))[0])


def scripted(vlm_dir: str, chain: list[str], sharpness: float = 8.0) -> TransformersVLM:
    """A tiny VLM whose next token depends only on the current one, along ``chain``.

    The decoder layer's output projections are zeroed, so the last hidden state is the
    (normed) embedding of the last token; lm_head rows are set so that ``chain[i]``
    predicts ``chain[i + 1]`` with logit ``sharpness`` (the prompt ends with ``"\\n"``).
    """
    model = TransformersVLM(vlm_dir, device="cpu", answer_max_tokens=8)
    net = model._model
    tok = model._processor.tokenizer
    lm = net.model.language_model
    with torch.no_grad():
        for layer in lm.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        net.lm_head.weight.zero_()
        for prev, nxt in zip(["\n", *chain], chain, strict=False):
            prev_id = tok.convert_tokens_to_ids(tok.tokenize(prev))[-1]
            h = lm.norm(lm.embed_tokens.weight[prev_id][None])[0]
            nxt_id = tok.convert_tokens_to_ids(nxt) if nxt.startswith("<|") else None
            if nxt_id is None:
                (nxt_id,) = tok.convert_tokens_to_ids(tok.tokenize(nxt))
            net.lm_head.weight[nxt_id] += sharpness * h / h.dot(h)
    return model


@pytest.mark.parametrize(
    ("chain", "expect_zero"),
    [
        (["B", "<|im_end|>"], False),  # one option letter: its probability
        (["B", ".", "<|im_end|>"], False),  # "B." is still one letter token
        (["B", "C", "<|im_end|>"], True),  # two letters
        (["x", "<|im_end|>"], True),  # no option letter
    ],
)
def test_mcq_confidence_is_the_option_letter_probability(
    tiny_qwen_dir: str, sample: VideoQA, chain: list[str], expect_zero: bool
) -> None:
    model = scripted(tiny_qwen_dir, chain)
    spy = GenerateSpy(model._model)
    model._model.generate = spy
    batch = FrameBatch.sample(sample.video, Interval(0, 20), 2, (56, 56))
    answer = model.answer(batch, sample.question, sample.options)
    out, n_prompt = spy.outputs[-1]
    ids, top1 = hand_top1(out, n_prompt, end_token(model))
    tok = model._processor.tokenizer
    assert [tok.decode([i]) for i in ids[: len(chain)]] == chain
    assert answer.token_probs == pytest.approx(top1, abs=1e-6)
    if expect_zero:
        assert answer.confidence == 0.0
    else:
        assert answer.text.startswith("B")
        assert answer.confidence == round(top1[0], 3) > 0.5


def test_batched_windows_equal_one_by_one(vlm: TransformersVLM, sample: VideoQA) -> None:
    windows = [(Interval(0, 20), 1, (56, 56)), (Interval(20, 40), 4, (112, 56))]
    windows += [(Interval(60, 80), 2, (56, 56))]
    batches = [FrameBatch.sample(sample.video, w, n, r) for w, n, r in windows]
    together = vlm.answer_batch(batches, sample.question)  # open: every token counts
    alone = [vlm.answer(b, sample.question) for b in batches]
    for a, b in zip(together, alone, strict=True):
        assert a.text == b.text and a.n_visual_tokens == b.n_visual_tokens
        assert a.confidence == pytest.approx(b.confidence, abs=2e-3)
        assert a.token_probs == pytest.approx(b.token_probs, abs=1e-4)
    assert len({a.text for a in alone}) > 1  # replies depend on the frames


class ProcessorSpy:
    """Records the pixel arrays and timestamps the processor receives."""

    def __init__(self, processor: Any) -> None:
        self.processor = processor
        self.videos: list[np.ndarray] = []
        self.images: list[np.ndarray] = []
        self.fps: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.processor, name)

    def __call__(self, **kwargs: Any) -> Any:
        self.videos.extend(kwargs.get("videos") or [])
        self.images.extend(kwargs.get("images") or [])
        self.fps.extend(m.fps for m in kwargs.get("video_metadata") or [])
        return self.processor(**kwargs)


def test_frames_reach_the_processor_at_the_batch_times_and_size(
    vlm: TransformersVLM, sample: VideoQA
) -> None:
    spy = ProcessorSpy(vlm._processor)
    vlm._processor = spy
    try:
        video = FrameBatch.sample(sample.video, Interval(10, 40), 4, (112, 84))
        image = FrameBatch.sample(sample.video, Interval(50, 52), 1, (56, 56))
        vlm.answer_batch([video, image], sample.question)
    finally:
        vlm._processor = spy.processor
    assert video.size == Size(112, 63) and image.size == Size(56, 31)  # off Qwen's grid
    assert spy.videos[0].shape == (4, 56, 112, 3) and spy.images[0].shape == (28, 56, 3)
    call = vlm.last_call
    assert call is not None
    assert call.frames[0] == (tuple(video.times), Size(112, 56), "video")
    assert call.frames[1] == (tuple(image.times), Size(56, 28), "image")
    assert spy.fps == [pytest.approx(3 / 22.5)]  # 4 frames over 22.5 s of centres
    on_grid = FrameBatch(sample.video, np.array([1.0, 2.0]), Size(84, 56))
    vlm._processor = spy
    try:
        vlm.answer(on_grid, sample.question)
    finally:
        vlm._processor = spy.processor
    assert np.array_equal(spy.videos[-1], on_grid.pixels())  # exactly the env's pixels


def test_pixel_budgets_are_respected_and_recorded(tiny_qwen_dir: str, sample: VideoQA) -> None:
    capped = TransformersVLM(tiny_qwen_dir, device="cpu", max_pixels=56 * 56, answer_max_tokens=2)
    batch = FrameBatch.sample(sample.video, Interval(0, 10), 2, (224, 224))
    answer = capped.answer(batch, sample.question)
    assert capped.last_call is not None
    fed = capped.last_call.frames[0][1]
    assert fed.width * fed.height <= 56 * 56 and fed.width % 28 == fed.height % 28 == 0
    assert answer.n_visual_tokens == (fed.width // 28) * (fed.height // 28)
    assert capped.config["max_pixels"] == 56 * 56
    with pytest.raises(ConfigError):
        TransformersVLM(tiny_qwen_dir, min_pixels=10)


def test_unset_budgets_are_the_checkpoint_processors(tiny_qwen_dir: str, sample: VideoQA) -> None:
    """As Qwen's own pipeline would: frames above the processor's budget are scaled down."""
    vlm = TransformersVLM(tiny_qwen_dir, device="cpu", answer_max_tokens=2)
    assert (vlm.min_pixels, vlm.max_pixels) == (28 * 28, 28 * 28 * 1280)  # tiny builder's
    batch = FrameBatch.sample(sample.video, Interval(0, 10), 1, (1920, 1080))
    vlm.answer(batch, sample.question)
    assert vlm.last_call is not None
    fed = vlm.last_call.frames[0][1]
    assert fed.width * fed.height <= 28 * 28 * 1280 < 1920 * 1080
    explicit = TransformersVLM(tiny_qwen_dir, device="cpu", max_pixels=56 * 56)
    assert explicit.max_pixels == 56 * 56 and explicit.min_pixels == 28 * 28


def test_caption_chat_and_usage(tiny_qwen_dir: str, sample: VideoQA) -> None:
    model = TransformersVLM(tiny_qwen_dir, device="cpu")
    batch = FrameBatch.sample(sample.video, Interval(0, 60), 4, (56, 56))
    caption = model.caption(batch, max_tokens=5)
    assert isinstance(caption, str)
    assert model.last_call is not None
    assert model.last_call.prompt_tokens[0] > model.last_call.visual_tokens[0] > 0
    frame = FrameBatch.sample(sample.video, Interval(70, 80), 1, (56, 56))
    reply = model.chat(
        [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": ["First clip:", batch, "then a frame:", frame, "What?"]},
        ],
        max_new_tokens=4,
        logprobs=True,
    )
    assert reply.completion_tokens <= 4 and reply.logprobs is not None
    assert len(reply.logprobs) == reply.completion_tokens
    assert all(lp <= 0 for lp in reply.logprobs)
    assert [kind for _, _, kind in model.last_call.frames] == ["video", "image"]
    usage = model.usage
    assert usage.caption_calls == 1 and usage.vlm_calls == 1 and usage.frames == 4 + 4 + 1
    assert usage.visual_tokens == 2 * 2 + 2 * 2 + 2  # 56x28 frames: 2 tokens per pair
    with pytest.raises(ConfigError):
        model.chat([{"role": "user", "content": [3]}])  # type: ignore[list-item]


def test_missing_weights_fail_fast_and_say_how_to_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(BackendError, match=r"not in the local Hugging Face cache.*local directory"):
        TransformersVLM("Qwen/Qwen2.5-VL-7B-Instruct", device="cpu")
    with pytest.raises(BackendError, match="no model directory"):
        TransformersVLM(str(tmp_path / "nope"), device="cpu")


def run_episode(env: Any, actions: list[Any]) -> dict[str, Any]:
    env.reset(seed=0)
    info: dict[str, Any] = {}
    for action in actions:
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    return info


@pytest.mark.slow
def test_tiny_model_runs_inside_zoom_clip_query_and_pacing(tiny_qwen_dir: str) -> None:
    from video_env.actions.types import AnswerAction, EvaluateAction, QueryAction, SegmentQuery
    from video_env.envs.clip_query import ClipQueryEnv
    from video_env.envs.pacing import PacingEnv
    from video_env.envs.pacing_rules import PacingRules, SpeedSpec
    from video_env.envs.zoom import ZoomEnv
    from video_env.envs.zoom_rules import ZoomRules

    model = TransformersVLM(tiny_qwen_dir, device="cpu", answer_max_tokens=4)
    samples = load_suite("synth-tiny", limit=1)
    real = Perception(vlm=model, captioner=model)
    small = {"short_pixels": 56 * 56, "long_pixels": 56 * 56, "max_frames": 4}
    zoom = ZoomEnv(samples, perception=real, rules=ZoomRules(**small), caption_max_tokens=4)
    windows = (Interval(0, 20), Interval(20, 25))
    info = run_episode(zoom, [EvaluateAction(windows), AnswerAction("A", Interval(0, 20))])
    episode = info["episode"]
    assert episode["vlm_calls"] == 2 and len(episode["vlm_readings"]) == 2
    assert model.last_call is not None and model.last_call.rows == 2  # one batched pass
    assert real.simulated is False

    with_clip = Perception(vlm=model, captioner=model, clip=SimulatedCLIP())
    clip_env = ClipQueryEnv(
        samples, perception=with_clip, caption_resolution=56, caption_max_tokens=4
    )
    query = QueryAction((SegmentQuery(2, "a red umbrella"),))
    info = run_episode(clip_env, [query, AnswerAction("A")])
    assert info["episode"]["caption_calls"] == 5 + 1

    tiny_speed = SpeedSpec(2, 56, 1)
    speeds = {1: tiny_speed, 2: SpeedSpec(2, 56, 2), 4: SpeedSpec(2, 56, 4)}
    pacing = PacingEnv(samples, perception=real, rules=PacingRules(speeds=speeds))
    from video_env.actions.types import SpeedAction

    info = run_episode(pacing, [SpeedAction(2), AnswerAction("A")])
    assert info["episode"]["vlm_calls"] == 2


def test_alternative_confidence_rules(tiny_qwen_dir: str, sample: VideoQA) -> None:
    batch = FrameBatch.sample(sample.video, Interval(0, 20), 2, (56, 56))
    replies = {}
    for rule in ("falconeye", "sequence", "mean", "verbal"):
        model = TransformersVLM(tiny_qwen_dir, device="cpu", confidence=rule, answer_max_tokens=4)
        replies[rule] = (model.answer(batch, sample.question), model.last_call)
    probs = replies["mean"][0].token_probs  # greedy: each token is its step's top-1
    assert replies["sequence"][0].confidence == pytest.approx(math.prod(probs))
    assert replies["mean"][0].confidence == pytest.approx(sum(probs) / len(probs))
    assert replies["falconeye"][0].confidence == round(math.prod(probs) ** (1 / len(probs)), 3)
    verbal, call = replies["verbal"]
    assert verbal.confidence == 0.0  # the random model states no "Confidence: N"
    assert call is not None and replies["mean"][1] is not None
    assert call.prompt_tokens[0] > replies["mean"][1].prompt_tokens[0]  # the instruction
    with pytest.raises(ConfigError, match="unknown confidence rule"):
        TransformersVLM(tiny_qwen_dir, confidence="entropy")


def test_a_retrained_local_folder_is_a_new_revision(tiny_qwen_dir: str, tmp_path: Path) -> None:
    import shutil

    from video_env.backends.hf_generation import folder_revision

    folder = tmp_path / "model"
    shutil.copytree(tiny_qwen_dir, folder)
    before = TransformersVLM(str(folder), device="cpu").config["revision"]
    assert before == folder_revision(str(tiny_qwen_dir)), "the same bytes, the same revision"
    weights = next(folder.glob("*.safetensors"))
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one changed bit of one weight: another model in the same folder
    weights.write_bytes(bytes(data))
    after = TransformersVLM(str(folder), device="cpu").config["revision"]
    assert before and after and before != after, "the caches must not serve the old answers"
    assert folder_revision("Qwen/Qwen2.5-VL-7B-Instruct") is None
