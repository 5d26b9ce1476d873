"""The Pacing env as verl's agent loop, run with verl's own classes against a scripted server.

Needs the ``verl`` extra (skipped without it): a venv of its own, as the verl stage of
``scripts/run-tests`` builds (``.venv-verl``). The loop is built the way verl's rollout
worker builds it (its registry entry from ``examples/verl/agent_loop.yaml``, instantiated by
Hydra with verl's config wrappers), with the tiny Qwen2.5-VL's real tokenizer and processor
(``video_env/pixel/vlm_weights``); only the inference server is a fake whose ``generate``
returns scripted token ids.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

pytest.importorskip(
    "verl",
    reason="needs the verl extra, in a venv of its own (.venv-verl: the verl stage of "
    "scripts/run-tests builds it)",
)

from omegaconf import OmegaConf
from transformers import AutoProcessor
from verl.experimental.agent_loop.agent_loop import (
    AgentLoopWorker,
    _agent_loop_registry,
)
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.workers.rollout.replica import TokenOutput
from verl_scripted import (
    AGENT_LOOP_YAML,
    PROMPT_LENGTH,
    RESPONSE_LENGTH,
    ROOT,
    SPEED,
    ScriptedServer,
    answer,
    check_mask,
    in_process_episode,
    play,
    row_info,
    trainer_config,
)

import policies.training.verl_loop as verl_loop
from policies.episode_settings import EpisodeSettings
from policies.training.adapter import server_env_kwargs
from policies.training.cli_common import RULES
from video_env.cli import main as cli_main
from video_env.data.verl_rows import AGENT_NAME, SampleSource, sample_of, samples_of
from video_env.errors import ConfigError
from video_env.pixel import PIXEL_VLM_DIR
from video_env.synth.suites import load_suite
from video_env.video import write_video
from video_env.video.testing import coded_frames


@pytest.fixture(scope="module")
def processor() -> Any:
    return AutoProcessor.from_pretrained(PIXEL_VLM_DIR)


@pytest.fixture(scope="module")
def source() -> SampleSource:
    return SampleSource(suite="synth-tiny", limit=4)


def test_the_loop_is_registered_under_its_name_for_verl() -> None:
    assert _agent_loop_registry[AGENT_NAME]["_target_"] == (
        "policies.training.verl_loop.VideoEnvAgentLoop"
    )
    entries = OmegaConf.load(AGENT_LOOP_YAML)
    assert [e.name for e in entries] == [AGENT_NAME]
    assert entries[0]["_target_"] == "policies.training.verl_loop.VideoEnvAgentLoop"


def test_the_example_config_composes_with_verls_defaults_and_passes_its_checks() -> None:
    from hydra import compose, initialize_config_dir
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    with initialize_config_dir(config_dir=str(ROOT / "examples" / "verl"), version_base=None):
        config = compose(config_name="videoscout_dapo")
    validate_config(
        config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config)
    )
    rollout = omega_conf_to_dataclass(config.actor_rollout_ref.rollout)
    actor = omega_conf_to_dataclass(config.actor_rollout_ref.actor)
    assert rollout.agent.default_agent_loop == AGENT_NAME
    assert ROOT / rollout.agent.agent_loop_config_path == AGENT_LOOP_YAML
    assert (rollout.n, actor.optim.lr, actor.clip_ratio_low, actor.clip_ratio_high) == (
        8,
        5e-6,
        0.2,
        0.28,
    )
    assert config.algorithm.filter_groups.metric in verl_loop.REWARD_KEYS
    # a whole episode fits the engine and one micro-batch of the actor
    assert rollout.prompt_length + rollout.response_length <= rollout.max_model_len
    sequence_parallel = actor.ulysses_sequence_parallel_size
    assert actor.ppo_max_token_len_per_gpu * sequence_parallel >= rollout.max_model_len
    # the engine takes every frame an episode can show under the loop's rules and turn cap
    entry = OmegaConf.load(AGENT_LOOP_YAML)[0]
    rules = RULES[entry.rules]()
    most_frames = max(spec.frames for spec in [*rules.speeds.values(), rules.rewatch])
    assert rollout.limit_images >= entry.max_turns * most_frames


def test_right_answer_after_watching_mask_images_and_reward(processor: Any, source) -> None:
    sample = load_suite("synth-tiny", limit=4)[0]
    replies = [SPEED, SPEED, answer(sample.answer)]
    server = ScriptedServer(processor.tokenizer, replies)
    output = play(processor, server, row_info(source, sample.id))

    assert len(server.calls) == 3
    assert len({c["request_id"] for c in server.calls}) == 1  # one session per episode
    env_runs = check_mask(output, server, processor.tokenizer)
    assert sum(output.response_mask) == sum(len(ids) for ids in server.sent)
    # two env turns between the three replies, each VideoScout's user turn with its frames
    assert len(env_runs) == 2
    assert all("<|im_start|>user" in text and "<|image_pad|>" in text for text in env_runs)
    assert all("Your memory" in text or "memory" in text.lower() for text in env_runs)
    # every frame shown so far reaches generate, one image per placeholder in the prompt
    vision_start = processor.tokenizer.convert_tokens_to_ids("<|vision_start|>")
    counts = [len(c["images"]) for c in server.calls]
    assert counts[0] > 0 and counts[0] < counts[1] < counts[2]
    for call in server.calls:
        assert call["prompt_ids"].count(vision_start) == len(call["images"])
        assert all(image.size == (56, 56) for image in call["images"])
        assert call["videos"] is None
    assert len(output.multi_modal_data["images"]) == counts[-1]
    # the reward is the env's for the same replies, with its parts
    reference = in_process_episode(sample, replies)
    record = output.extra_fields["video_env_record"]
    assert record["correct"] is True and record["ended_by"] == reference.record["ended_by"]
    assert output.reward_score == pytest.approx(reference.reward) and output.reward_score > 0
    info = output.extra_fields["reward_extra_info"]
    assert set(info) == set(verl_loop.REWARD_KEYS)
    parts = reference.record["reward_parts"]
    assert (info["acc"], info["fmt"], info["timing"]) == pytest.approx(
        (parts["acc"], parts["fmt"], parts["timing"])
    )
    assert info["correct"] == 1.0 and info["env_turns"] == 3
    assert output.num_turns == 1 + 3 + 2


def test_an_early_answer_ends_at_the_first_reply(processor: Any, source) -> None:
    sample = load_suite("synth-tiny", limit=4)[1]
    replies = [answer(sample.answer)]
    server = ScriptedServer(processor.tokenizer, replies)
    output = play(processor, server, row_info(source, sample.id))

    assert len(server.calls) == 1
    assert output.response_mask == [1] * len(server.sent[0])
    reference = in_process_episode(sample, replies)
    assert output.reward_score == pytest.approx(reference.reward)
    assert output.extra_fields["reward_extra_info"]["env_turns"] == 1
    assert output.num_turns == 2


def test_malformed_replies_spend_the_error_allowance(processor: Any, source) -> None:
    sample = load_suite("synth-tiny", limit=4)[2]
    replies = ["I am not sure what to do.", "<think>unclosed", "speed(9x)", "??"]
    server = ScriptedServer(processor.tokenizer, replies)
    output = play(processor, server, row_info(source, sample.id))

    reference = in_process_episode(sample, replies)
    record = output.extra_fields["video_env_record"]
    assert record["ended_by"] == reference.record["ended_by"]
    assert record["invalid_actions"] == reference.record["invalid_actions"] > 0
    assert len(server.calls) == reference.turns
    assert output.reward_score == pytest.approx(reference.reward) and output.reward_score <= 0
    env_runs = check_mask(output, server, processor.tokenizer)
    assert len(env_runs) == len(server.calls) - 1
    assert all("invalid" in text for text in env_runs)  # the env's feedback reaches the model
    assert output.extra_fields["reward_extra_info"]["invalid_actions"] == record["invalid_actions"]


def test_a_reply_over_the_token_budget_ends_the_episode_unanswered(processor, source) -> None:
    sample = load_suite("synth-tiny", limit=4)[0]
    letter = processor.tokenizer.encode("A", add_special_tokens=False)[0]
    server = ScriptedServer(processor.tokenizer, [SPEED, [letter] * (2 * RESPONSE_LENGTH)])
    output = play(processor, server, row_info(source, sample.id))

    assert len(server.calls) == 2
    assert server.calls[1]["max_tokens"] < server.calls[0]["max_tokens"]  # what was left
    assert len(output.response_ids) == len(output.response_mask) == RESPONSE_LENGTH
    assert output.response_mask[-1] == 1  # cut inside the model's reply
    check_mask(output, server, processor.tokenizer)
    record = output.extra_fields["video_env_record"]
    assert record["ended_by"] == verl_loop.BUDGET_END and record["answer"] is None
    assert output.reward_score == 0.0
    assert record["turns"] == 1  # the cut reply never reached the env


def test_a_reply_filling_the_budget_unended_is_cut_too(processor, source) -> None:
    sample = load_suite("synth-tiny", limit=4)[0]
    letter = processor.tokenizer.encode("A", add_special_tokens=False)[0]
    server = ScriptedServer(processor.tokenizer, [[letter] * 40])  # max_tokens, unended
    info = row_info(source, sample.id)
    output = play(processor, server, info, response_length=40, max_new_tokens=64)

    assert server.calls[0]["max_tokens"] == 40
    assert output.response_mask == [1] * 40
    assert output.extra_fields["video_env_record"]["ended_by"] == verl_loop.BUDGET_END


def test_the_output_passes_verls_own_postprocessing(processor, source) -> None:
    """verl pads it, rebuilds the images' inputs and puts the reward where it trains on it."""
    sample = load_suite("synth-tiny", limit=4)[0]
    server = ScriptedServer(processor.tokenizer, [SPEED, answer(sample.answer)])
    output = play(processor, server, row_info(source, sample.id))

    worker = AgentLoopWorker.__new__(AgentLoopWorker)  # the worker's state that these steps read
    worker.rollout_config = trainer_config().actor_rollout_ref.rollout
    worker.tokenizer, worker.processor = processor.tokenizer, processor
    worker.reward_loop_worker_handles, worker.distillation_enabled = None, False
    worker.mm_processor_kwargs = {}

    async def post() -> Any:
        inner = await worker._agent_loop_postprocess(output, False, raw_prompt=[])
        return worker._postprocess([inner], input_non_tensor_batch=None)

    batch = asyncio.run(post())
    mask = batch.batch["response_mask"][0]
    assert int(mask.sum()) == sum(output.response_mask)
    scores = batch.batch["rm_scores"][0]
    assert float(scores.sum()) == pytest.approx(output.reward_score)
    assert int(scores.nonzero()[-1]) == len(output.response_ids) - 1  # on the last token
    assert set(verl_loop.REWARD_KEYS) <= set(batch.meta_info["reward_extra_keys"])
    assert batch.non_tensor_batch["correct"][0] == 1.0
    inputs = batch.non_tensor_batch["multi_modal_inputs"][0]
    assert int(inputs["image_grid_thw"].shape[0]) == len(output.multi_modal_data["images"])


def test_the_episode_runs_on_a_served_env_when_env_url_is_set(processor, source) -> None:
    """The same questions served (``video-env serve``'s app, in a thread): the row's sample id."""
    pytest.importorskip("openenv", reason="needs the openenv extra (the verl stage installs it)")
    from video_env.serving.testing import LocalServer

    samples = load_suite("synth-tiny", limit=4)
    sample = samples[0]
    settings = EpisodeSettings(rules=RULES["cpu-smoke"]())
    replies = [SPEED, answer(sample.answer)]
    server = ScriptedServer(processor.tokenizer, replies)
    with LocalServer("VideoEnv/Pacing-v1", server_env_kwargs(samples, settings)) as env_server:
        output = play(processor, server, row_info(source, sample.id), env_url=env_server.base_url)
        deadline = time.monotonic() + 10
        while env_server.sessions()["sessions"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert env_server.sessions()["sessions"] == 0  # the episode's session was closed

    reference = in_process_episode(sample, replies)
    record = output.extra_fields["video_env_record"]
    assert record["sample_id"] == sample.id and record["correct"] is True
    assert output.reward_score == pytest.approx(reference.reward)
    counts = [len(call["images"]) for call in server.calls]
    assert counts == [4, 8]  # the frames came over the wire and reached generate
    assert all(image.size == (56, 56) for image in server.calls[1]["images"])


def test_a_lost_env_session_ends_the_episode_with_reward_zero(processor, source) -> None:
    """The env server goes away mid-episode: the trajectory scores 0, the loop returns."""
    pytest.importorskip("openenv", reason="needs the openenv extra (the verl stage installs it)")
    from video_env.serving.testing import LocalServer

    samples = load_suite("synth-tiny", limit=4)
    settings = EpisodeSettings(rules=RULES["cpu-smoke"]())
    env_server = LocalServer("VideoEnv/Pacing-v1", server_env_kwargs(samples, settings))

    class ServerGoesAway(ScriptedServer):
        async def generate(self, request_id: str, **kwargs: Any) -> TokenOutput:
            if self.calls:  # the second reply: the env server is gone by now
                env_server.close()
            return await super().generate(request_id, **kwargs)

    server = ServerGoesAway(processor.tokenizer, [SPEED, answer(samples[0].answer)])
    try:
        output = play(
            processor, server, row_info(source, samples[0].id), env_url=env_server.base_url
        )
    finally:
        env_server.close()
    assert len(server.calls) == 2
    assert output.extra_fields["video_env_record"]["ended_by"] == "lost_session"
    assert output.reward_score == 0.0
    check_mask(output, server, processor.tokenizer)


def test_a_row_of_no_known_question_is_a_clear_error(processor, source) -> None:
    server = ScriptedServer(processor.tokenizer, [])
    with pytest.raises(ConfigError, match="unknown sample_id"):
        play(processor, server, row_info(source, "no-such-question"))
    with pytest.raises(ConfigError, match="video_env_source"):
        play(processor, server, {"index": 0, "sample_id": "x"})
    assert server.calls == []


def test_the_export_is_read_back_by_verls_dataset(processor, tmp_path, capsys) -> None:
    out = tmp_path / "train.parquet"
    code = cli_main(["data", "export", "--format", "verl", str(out), "--suite", "synth-tiny"])
    assert code == 0 and "rows of synth-tiny" in capsys.readouterr().out
    samples = load_suite("synth-tiny")
    config = OmegaConf.create(
        {
            "max_prompt_length": PROMPT_LENGTH,
            "return_raw_chat": True,
            "filter_overlong_prompts": True,
            "cache_dir": str(tmp_path / "cache"),
        }
    )
    dataset = RLHFDataset(str(out), processor.tokenizer, config, processor)
    assert len(dataset) == len(samples)
    rows = [dataset[i] for i in range(len(dataset))]
    assert [r["extra_info"]["sample_id"] for r in rows] == [s.id for s in samples]
    assert {r["agent_name"] for r in rows} == {AGENT_NAME}
    assert rows[0]["raw_prompt"][0]["role"] == "user"
    assert samples[0].question in rows[0]["raw_prompt"][0]["content"]
    assert [r["reward_model"]["ground_truth"] for r in rows] == [s.answer or "" for s in samples]
    assert [r["index"] for r in rows] == list(range(len(samples)))
    # the batch a rollout worker gets, and the question each row names
    batch = collate_fn(rows[:2])
    assert list(batch["agent_name"]) == [AGENT_NAME] * 2
    for info, sample in zip(batch["extra_info"], samples[:2], strict=True):
        assert sample_of(info).id == sample.id
        assert sample_of(info).question == sample.question


def test_a_datasets_rows_play_its_video_files(processor, tmp_path) -> None:
    """A registered dataset (JSONL over a real video file): exported, then played by a row."""
    write_video(tmp_path / "coded.mp4", coded_frames(300), 30.0, gop=24)
    record = {"id": "q1", "video": "coded.mp4", "question": "Which number?",
              "options": ["one", "two"], "answer": "B", "gt_intervals": [[2.0, 4.0]]}  # fmt: skip
    (tmp_path / "qa.jsonl").write_text(json.dumps(record) + "\n")
    out = tmp_path / "rows.parquet"
    argv = ["data", "export", "--format", "verl", str(out), "--dataset", "jsonl",
            "--annotations", str(tmp_path / "qa.jsonl"), "--video-root", str(tmp_path)]  # fmt: skip
    assert cli_main(argv) == 0
    config = OmegaConf.create({"max_prompt_length": PROMPT_LENGTH, "cache_dir": str(tmp_path)})
    row = RLHFDataset(str(out), processor.tokenizer, config, processor)[0]
    assert row["extra_info"]["sample_id"] == "q1" and row["reward_model"]["ground_truth"] == "B"
    server = ScriptedServer(processor.tokenizer, [SPEED, answer("B")])
    output = play(processor, server, row["extra_info"])
    first = server.calls[0]["images"]
    assert len(first) == 4 and len({image.tobytes() for image in first}) == 4  # distinct frames
    assert output.extra_fields["video_env_record"]["correct"] is True
    assert output.reward_score > 0


def test_a_source_names_one_kind_of_questions() -> None:
    with pytest.raises(ConfigError):
        SampleSource()
    with pytest.raises(ConfigError):
        SampleSource(suite="synth-tiny", dataset="lvbench", annotations="x")
    with pytest.raises(ConfigError, match="annotations"):
        SampleSource(dataset="lvbench")
    with pytest.raises(ConfigError):
        SampleSource.from_json('{"suite": "synth-tiny", "colour": 1}')
    text = SampleSource(suite="synth-tiny", limit=2).to_json()
    assert SampleSource.from_json(text) == SampleSource(suite="synth-tiny", limit=2)
    assert list(samples_of(text)) == [s.id for s in load_suite("synth-tiny", limit=2)]
