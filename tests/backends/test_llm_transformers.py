"""The local transformers backend with a tiny random Qwen2 model and a BPE tokenizer made here."""

import os
from pathlib import Path

import pytest

from video_env.backends.llm import LLM, TransformersLLM, make_llm
from video_env.backends.llm.transformers_local import plain_prompt
from video_env.errors import BackendError, ConfigError

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
MESSAGES = [
    {"role": "system", "content": "answer with a JSON object"},
    {"role": "user", "content": "what colour is the umbrella"},
]


def build_tiny_model(path: Path, chat_template: bool) -> Path:
    """Save a random 2-layer Qwen2 and a byte-level BPE tokenizer trained on a few sentences."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    t = tokenizers
    tok = t.Tokenizer(t.models.BPE())
    tok.pre_tokenizer = t.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = t.decoders.ByteLevel()
    trainer = t.trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=t.pre_tokenizers.ByteLevel.alphabet(),
    )
    sentences = [
        "the quick brown fox jumps over the lazy dog",
        "what colour is the umbrella in the video",
        "answer with a JSON object and a confidence",
        "system user assistant",
    ]
    tok.train_from_iterator(sentences, trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>"
    )
    if chat_template:
        fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(path)
    config = transformers.Qwen2Config(
        vocab_size=tok.get_vocab_size(),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
    )
    torch.manual_seed(0)
    transformers.Qwen2ForCausalLM(config).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen2"), chat_template=True)


@pytest.fixture(scope="module")
def tiny(tiny_path: Path) -> TransformersLLM:
    return TransformersLLM(tiny_path, max_new_tokens=6)


def test_chat_returns_a_counted_completion(tiny: TransformersLLM) -> None:
    assert isinstance(tiny, LLM)
    assert tiny.has_chat_template
    prompt = tiny.prompt(MESSAGES)
    assert prompt.startswith("<|im_start|>system") and prompt.endswith("<|im_start|>assistant\n")
    before = tiny.usage
    done = tiny.chat(MESSAGES, logprobs=True)
    assert isinstance(done.text, str)
    n_prompt = len(tiny._tokenizer(prompt, add_special_tokens=False)["input_ids"])
    assert done.prompt_tokens == n_prompt
    assert 1 <= done.completion_tokens <= 6
    assert done.logprobs is not None and len(done.logprobs) == done.completion_tokens
    assert all(lp <= 0.0 for lp in done.logprobs)
    assert done.finish_reason in {"stop", "length"}
    assert done.cost_usd == 0.0 and not done.usage_estimated and done.latency_s > 0
    spent = tiny.usage - before
    assert (spent.llm_calls, spent.prompt_tokens) == (1, done.prompt_tokens)
    assert spent.completion_tokens == done.completion_tokens and spent.money_usd == 0.0


def test_greedy_is_deterministic_and_usage_accumulates(tiny: TransformersLLM) -> None:
    before = tiny.usage
    a = tiny.chat(MESSAGES, max_tokens=4, json=True)
    b = tiny.chat(MESSAGES, max_tokens=4)
    assert a.text == b.text and a.logprobs is None
    assert a.completion_tokens <= 4
    spent = tiny.usage - before
    assert spent.llm_calls == 2
    assert spent.prompt_tokens == a.prompt_tokens + b.prompt_tokens
    assert spent.completion_tokens == a.completion_tokens + b.completion_tokens


def test_sampling_with_temperature(tiny: TransformersLLM) -> None:
    torch.manual_seed(1)
    done = tiny.chat(MESSAGES, temperature=1.0, max_tokens=3, logprobs=True)
    assert done.logprobs is not None and len(done.logprobs) == done.completion_tokens


def test_plain_prompt_without_template(tmp_path: Path) -> None:
    path = build_tiny_model(tmp_path, chat_template=False)
    llm = TransformersLLM(path, dtype="float32", max_new_tokens=2)
    assert not llm.has_chat_template
    assert llm.prompt(MESSAGES) == plain_prompt(MESSAGES)
    assert plain_prompt(MESSAGES).endswith("user: what colour is the umbrella\nassistant:")
    done = llm.chat(MESSAGES)
    assert done.prompt_tokens > 0 and done.completion_tokens <= 2
    assert llm.describe()["chat_template"] is False


def test_make_llm_local(tiny_path: Path) -> None:
    llm = make_llm(f"local:{tiny_path}", max_new_tokens=3)
    assert isinstance(llm, TransformersLLM)
    assert llm.name == f"local:{tiny_path.name}" and llm.max_new_tokens == 3


def test_errors(tmp_path: Path, tiny_path: Path) -> None:
    with pytest.raises(BackendError, match="cannot load"):
        TransformersLLM(tmp_path / "missing")
    with pytest.raises(ConfigError):
        TransformersLLM(tiny_path, dtype="float99")
    with pytest.raises(ConfigError):
        TransformersLLM(tiny_path, max_new_tokens=0)
