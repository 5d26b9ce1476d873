"""A scripted inference server and verl's way of building and running the agent loop.

Imported by ``tests/training/test_verl.py`` once verl is known to import (the verl extra).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import hydra
from omegaconf import OmegaConf
from verl.experimental.agent_loop.agent_loop import (
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.rollout.replica import TokenOutput

from policies.episode_settings import EpisodeSettings
from policies.training.adapter import PacingChatEnv
from policies.training.cli_common import RULES
from video_env.data.verl_rows import AGENT_NAME, SampleSource

ROOT = Path(__file__).resolve().parents[2]
AGENT_LOOP_YAML = ROOT / "examples" / "verl" / "agent_loop.yaml"
PROMPT_LENGTH = 2048
RESPONSE_LENGTH = 1200
#: A Think-Act reply that goes on watching.
SPEED = "<think>Nothing yet.</think><memory>Saw the start.</memory><action>speed(2x)</action>"


def answer(letter: str) -> str:
    return (
        f'<think>It is {letter}.</think><memory>Done.</memory><action>answer("{letter}")</action>'
    )


class ScriptedServer:
    """verl's ``server_manager`` (``LLMServerClient.generate``'s signature), replying from a script.

    Each reply is text (tokenized, then the end-of-turn token) or raw token ids (sent as
    they are, whatever ``max_tokens`` says). Every call is kept.
    """

    def __init__(self, tokenizer: Any, replies: list[str | list[int]]) -> None:
        self.tokenizer = tokenizer
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []
        self.sent: list[list[int]] = []

    async def generate(
        self,
        request_id: str,
        *,
        prompt_ids: list[int],
        sampling_params: dict[str, Any],
        image_data: list[Any] | None = None,
        video_data: list[Any] | None = None,
        audio_data: list[Any] | None = None,
        mm_processor_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> TokenOutput:
        self.calls.append(
            {
                "request_id": request_id,
                "prompt_ids": list(prompt_ids),
                "max_tokens": sampling_params["max_tokens"],
                "images": list(image_data or []),
                "videos": video_data,
            }
        )
        reply = self.replies.pop(0) if self.replies else answer("A")
        if isinstance(reply, str):
            ids = self.tokenizer.encode(reply, add_special_tokens=False)
            ids = [*ids, self.tokenizer.convert_tokens_to_ids("<|im_end|>")]
        else:
            ids = list(reply)
        self.sent.append(ids)
        return TokenOutput(token_ids=ids, stop_reason="completed")


def trainer_config(response_length: int = RESPONSE_LENGTH) -> Any:
    return OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {"prompt_length": PROMPT_LENGTH, "response_length": response_length}
            },
            "data": {"max_prompt_length": PROMPT_LENGTH, "return_raw_chat": True},
        }
    )


def build_loop(processor: Any, server: ScriptedServer, **overrides: Any) -> Any:
    """The loop as verl's worker builds it: the YAML's registry entry, then Hydra."""
    response_length = overrides.pop("response_length", RESPONSE_LENGTH)
    entries = OmegaConf.load(AGENT_LOOP_YAML)
    entry = next(e for e in entries if e.name == AGENT_NAME)
    _agent_loop_registry[entry.name] = entry  # what AgentLoopWorker does with the file
    config = trainer_config(response_length)
    return hydra.utils.instantiate(
        config=OmegaConf.merge(entry, {"rules": "cpu-smoke", **overrides}),
        trainer_config=DictConfigWrap(config=config),
        server_manager=server,
        tokenizer=processor.tokenizer,
        processor=processor,
        hf_model_type="qwen2_5_vl",
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data),
        tools=ToolListWrap([]),
    )


def play(processor: Any, server: ScriptedServer, extra_info: Any, **overrides: Any) -> Any:
    """One episode, the loop built inside the event loop that runs it (as in verl's worker)."""

    async def run() -> Any:
        loop = build_loop(processor, server, **overrides)
        return await loop.run({"temperature": 1.0, "top_p": 1.0}, extra_info=extra_info)

    return asyncio.run(run())


def row_info(source: SampleSource, sample_id: str) -> dict[str, Any]:
    return {"index": 0, "sample_id": sample_id, "video_env_source": source.to_json()}


def in_process_episode(sample: Any, replies: list[str]) -> PacingChatEnv:
    """The same replies played straight on the engine-neutral driver (the reference)."""
    episode = PacingChatEnv(sample, EpisodeSettings(rules=RULES["cpu-smoke"]()))
    episode.reset()
    for reply in replies:
        if episode.step(reply).done:
            break
    episode.finish("max_steps")
    return episode


def check_mask(output: Any, server: ScriptedServer, tokenizer: Any) -> list[str]:
    """The model's tokens are exactly the mask's 1s, in order; the env's turns are the 0s."""
    response, mask = output.response_ids, output.response_mask
    assert len(response) == len(mask) <= RESPONSE_LENGTH
    assert set(mask) <= {0, 1}
    model = [t for t, m in zip(response, mask, strict=True) if m == 1]
    sent = [t for ids in server.sent for t in ids]
    assert model == sent[: len(model)]
    env_runs: list[str] = []
    run: list[int] = []
    for token, bit in zip(response, mask, strict=True):
        if bit == 0:
            run.append(token)
        elif run:
            env_runs.append(tokenizer.decode(run))
            run = []
    if run:
        env_runs.append(tokenizer.decode(run))
    return env_runs
