"""video-env in lmms-eval, both directions, run by lmms-eval's CLI against a local fake server.

Needs the ``lmms`` extra (skipped without it): a second venv, as CI's lmms stage builds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("lmms_eval")

from benchmarks.lmms import TASKS_DIR
from benchmarks.lmms.agentic import doc_to_text, process_results
from benchmarks.lmms.requests import parse_options, request_sample
from benchmarks.lmms.task_docs import MAX_AGENTIC_STEPS, docs_for
from video_env.backends.llm.testing import FakeOpenAIServer, chat_reply, request_images
from video_env.errors import ConfigError
from video_env.synth.suites import load_suite
from video_env.video import write_video
from video_env.video.testing import coded_frames

pytestmark = pytest.mark.slow

#: A task of our own over a local JSONL (no hub): video path, question, options, answer.
LOCAL_TASK = """\
task: local_videoqa
dataset_path: json
dataset_kwargs:
  data_files:
    test: {docs}
test_split: test
output_type: generate_until
doc_to_visual: !function local_utils.doc_to_visual
doc_to_text: !function local_utils.doc_to_text
doc_to_target: answer
process_results: !function local_utils.process_results
generation_kwargs:
  max_new_tokens: 16
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
"""
LOCAL_UTILS = """\
def doc_to_visual(doc):
    return [doc["video"]]
def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    lines = [doc["question"], *[f"{'ABC'[i]}. {o}" for i, o in enumerate(doc["options"])]]
    return "\\n".join(lines) + "\\nAnswer with the option's letter from the given choices directly."
def process_results(doc, results):
    return {"exact_match": float(results[0].strip()[:1] == doc["answer"])}
"""
ZOOM_TASK = """\
include: {template}
task: video_env_zoom_tiny
dataset_kwargs:
  suite: synth-tiny
  env: zoom
  max_turns: 3
"""


def lmms_eval(args: list[str], fake: FakeOpenAIServer, out: Path) -> dict[str, Any]:
    """Run ``python -m lmms_eval`` with the fake server; its results and logged samples."""
    env = {
        **os.environ,
        "VIDEO_ENV_VLM_BASE_URL": fake.base_url,
        "VIDEO_ENV_LLM_BASE_URL": fake.base_url,
        "OPENAI_API_KEY": "x",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_DATASETS_CACHE": str(out / "hf-cache"),
        "WANDB_MODE": "disabled",
    }
    cmd = [sys.executable, "-m", "lmms_eval", *args, "--log_samples", "--output_path", str(out)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (results,) = out.rglob("*_results.json")
    samples = {
        p.name: [json.loads(line) for line in p.read_text().splitlines()]
        for p in out.rglob("*_samples_*.jsonl")
    }
    return {"results": json.loads(results.read_text())["results"], "samples": samples}


@pytest.fixture
def local_task(tmp_path: Path) -> Path:
    video = tmp_path / "coded.mp4"
    write_video(video, coded_frames(300), 30.0, gop=24)
    docs = [
        {"video": str(video), "question": "Which number?", "options": ["one", "two", "three"],
         "answer": "A", "gt_intervals": [[2.0, 4.0]]},
        {"video": str(tmp_path / "missing.mp4"), "question": "Which colour?",
         "options": ["red", "blue"], "answer": "B", "gt_intervals": []},
    ]  # fmt: skip
    folder = tmp_path / "tasks"
    folder.mkdir()
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "local_videoqa.yaml").write_text(LOCAL_TASK.format(docs=tmp_path / "docs.jsonl"))
    (folder / "local_utils.py").write_text(LOCAL_UTILS)
    return folder


def test_a_video_env_agent_answers_an_lmms_eval_task(local_task: Path, tmp_path: Path) -> None:
    """``--model video_env``: FALCONEye on a real video file, VLM and LLM on the fake server."""
    vlm_letter = chat_reply("A", logprobs=[-0.05], tokens=["A"])
    with FakeOpenAIServer(default=vlm_letter) as fake:
        args = ["--model", "video_env", "--model_args",
                "policy=falconeye,vlm=openai:fake-vl,llm=openai:fake-llm",
                "--tasks", "local_videoqa", "--include_path", str(local_task)]  # fmt: skip
        run = lmms_eval(args, fake, tmp_path / "out")
        shown = sum(len(request_images(r)) for r in fake.requests)
    assert run["results"]["local_videoqa"]["exact_match,none"] == 0.5
    (samples,) = run["samples"].values()
    first, missing = sorted(samples, key=lambda s: s["doc_id"])
    assert first["filtered_resps"] == "A" and first["exact_match"] == 1.0
    episode = json.loads(first["resps"].removeprefix("<think>").partition("</think>")[0])
    episode = episode["video_env"]
    assert episode["policy"] == "falconeye" and episode["env"] == "zoom"
    assert episode["simulated"] is False and episode["error"] is None
    assert episode["gtou"] == pytest.approx(0.2)  # window [0, 10] over the evidence [2, 4]
    assert episode["vlm_calls"] >= 1 and episode["llm_calls"] >= 1 and episode["frames"] > 0
    tokens = episode["model_tokens"]
    assert first["token_counts"] == [
        {"input_tokens": tokens["input"], "output_tokens": tokens["output"]}
    ]
    assert shown == episode["frames"]  # the VLM saw the file's frames
    # the request without a video is recorded and scored wrong, the run goes on
    assert missing["filtered_resps"] == "" and missing["exact_match"] == 0.0
    assert "no video file" in missing["resps"]


def test_an_lmms_eval_model_drives_the_zoom_env(tmp_path: Path) -> None:
    """The env as an agentic task: lmms-eval's ``openai`` model, replies scripted."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    template = TASKS_DIR / "_video_env_template_yaml"
    (folder / "zoom_tiny.yaml").write_text(ZOOM_TASK.format(template=template))
    sample = load_suite("synth-tiny", limit=1)[0]
    evidence = sample.gt_intervals[0]
    replies = ["evaluate([0, 60])", "no action here",
               f'answer("{sample.answer}", [{evidence.start}, {evidence.end}])']  # fmt: skip
    with FakeOpenAIServer(
        [chat_reply(r) for r in replies], default=chat_reply("evaluate([0, 9])")
    ) as fake:
        args = ["--model", "openai", "--model_args", f"model=fake,base_url={fake.base_url}",
                "--tasks", "video_env_zoom_tiny", "--include_path", str(folder),
                "--limit", "2"]  # fmt: skip
        run = lmms_eval(args, fake, tmp_path / "out")
        first_prompt = str(fake.requests[0].body["messages"])
    metrics = run["results"]["video_env_zoom_tiny"]
    assert metrics["accuracy,none"] == 0.5  # the first episode answers right, the second never
    assert metrics["gtou,none"] == pytest.approx(0.5)  # 1 (exact window) and 0 (unanswered)
    assert metrics["simulated_perception,none"] == 1.0 and metrics["errors,none"] == 0.0
    assert "evaluate([start, end]" in first_prompt and sample.question in first_prompt
    (samples,) = run["samples"].values()
    right, capped = sorted(samples, key=lambda s: s["doc_id"])
    summary = json.loads(right["filtered_resps"])
    assert summary["correct"] is True and summary["invalid_steps"] == 1
    assert summary["replies"] == replies and summary["simulated"] is True
    assert json.loads(capped["filtered_resps"])["ended_by"] == "max_turns"
    assert capped["turns"] == 3.0


TOOLS_TASK = """\
include: {template}
task: video_env_tools_tiny
dataset_kwargs:
  suite: synth-tiny
  env: tools
  env_kwargs:
    preset: longvt
  max_turns: 3
"""


def test_an_lmms_eval_model_plays_longvts_tools_in_its_reply_format(tmp_path: Path) -> None:
    """The Tools env's ``longvt`` preset as an agentic task: Hermes tool calls, then <answer>."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    template = TASKS_DIR / "_video_env_template_yaml"
    (folder / "tools_tiny.yaml").write_text(TOOLS_TASK.format(template=template))
    sample = load_suite("synth-tiny", limit=1)[0]
    replies = [
        '<think>look</think><tool_call>{"name": "crop_video", "arguments": '
        '{"video_path": "v.mp4", "start_time": 0, "end_time": 10}}</tool_call>',
        f"<think>seen</think><answer>{sample.answer}</answer>",
    ]
    with FakeOpenAIServer([chat_reply(r) for r in replies]) as fake:
        args = ["--model", "openai", "--model_args", f"model=fake,base_url={fake.base_url}",
                "--tasks", "video_env_tools_tiny", "--include_path", str(folder),
                "--limit", "1"]  # fmt: skip
        run = lmms_eval(args, fake, tmp_path / "out")
        first_prompt = str(fake.requests[0].body["messages"])
    assert run["results"]["video_env_tools_tiny"]["accuracy,none"] == 1.0
    assert "crop_video" in first_prompt and sample.question in first_prompt
    (samples,) = run["samples"].values()
    summary = json.loads(samples[0]["filtered_resps"])
    assert summary["correct"] is True and summary["replies"] == replies


def test_the_entry_point_registers_the_model() -> None:
    from lmms_eval.models import get_model

    from benchmarks.lmms.model import VideoEnvModel

    assert get_model("video_env") is VideoEnvModel


@pytest.mark.parametrize(
    ("text", "question", "options"),
    [
        ("Q?\nA. x\nB. y\nAnswer with the letter.", "Q?\nAnswer with the letter.", ("x", "y")),
        ("Q?\n(A) x\n(B) y", "Q?", ("x", "y")),
        ("Plan A. then\nB. later", "Plan A. then\nB. later", None),  # not lettered from A
        ("Open question?", "Open question?", None),
        ("A. only one", "A. only one", None),
    ],
)
def test_options_are_read_from_the_prompt(text: str, question: str, options: Any) -> None:
    assert parse_options(text) == (question, options)


def test_a_request_without_a_video_or_with_bad_ground_truth_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no video file"):
        request_sample("t/0", "Q?", [], {})
    video = tmp_path / "v.mp4"
    write_video(video, coded_frames(30), 30.0)
    sample = request_sample("t/0", "Q?\nA. x\nB. y", [str(video)], {"gt": [[1, 2]]}, gt_field="gt")
    assert sample.options == ("x", "y") and sample.answer is None  # no answer unless told
    assert [iv.to_list() for iv in sample.gt_intervals] == [[1.0, 2.0]]


def test_an_env_that_raises_ends_its_episode_with_the_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (doc,) = docs_for({"suite": "synth-tiny", "env": "clip_query", "limit": 1})
    from video_env.envs import ClipQueryEnv

    def broken(self: Any, action: Any) -> Any:
        raise RuntimeError("backend down")

    monkeypatch.setattr(ClipQueryEnv, "step", broken)
    visuals, context, terminal, outputs, info = doc_to_text(
        doc, previous_output=['query(1, "a ball")'], round_idx=1
    )
    assert terminal and context is None and "env" not in info
    metrics = process_results(doc, outputs[-1:])
    assert metrics["errors"] == 1.0 and metrics["accuracy"] == 0.0
    assert "backend down" in json.loads(outputs[-1])["error"]
    # a final response that is no summary at all (lmms-eval's own fallback) is an error too
    assert process_results(doc, ['{"error": "max_agentic_steps_reached"}'])["errors"] == 1.0


def test_bad_dataset_kwargs_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="unknown dataset_kwargs"):
        docs_for({"suite": "synth-tiny", "nope": 1})
    with pytest.raises(ConfigError, match="unknown env"):
        docs_for({"suite": "synth-tiny", "env": "chess"})
    monkeypatch.delenv("VIDEO_ENV_LMMS_LOADER", raising=False)
    with pytest.raises(ConfigError, match="VIDEO_ENV_LMMS_LOADER"):
        docs_for({"loader": "${VIDEO_ENV_LMMS_LOADER}", "env": "zoom"})
    with pytest.raises(ConfigError, match="below the tasks' max_agentic_steps"):
        docs_for({"suite": "synth-tiny", "env": "zoom", "max_turns": 64})
    template = (Path(TASKS_DIR) / "_video_env_template_yaml").read_text()
    assert f"max_agentic_steps: {MAX_AGENTIC_STEPS}" in template  # one bound, said twice


# --- adversarial inputs: refused at construction, or recorded per request and survived ---


@pytest.mark.parametrize(
    ("model_args", "message"),
    [
        ("polcy=videoagent", "unknown model_args"),  # a typo must not run the default policy
        ("max_steps=0", "max_steps must be a whole number >= 1"),
        ("max_steps=-5", "max_steps must be a whole number >= 1"),
        ("max_steps=1.5", "max_steps must be a whole number >= 1"),
        ("max_steps=nan", "max_steps must be a whole number >= 1"),
        ("seed=-1", "seed must be a whole number >= 0"),
        ("seed=inf", "seed must be a whole number >= 0"),
        ("seed=abc", "seed must be a whole number >= 0"),
    ],
)
def test_bad_model_args_are_refused_at_construction(model_args: str, message: str) -> None:
    from benchmarks.lmms.model import VideoEnvModel

    lmms_config = {"batch_size": 1, "max_batch_size": None, "device": None}
    with pytest.raises(ConfigError, match=message):
        VideoEnvModel.create_from_arg_string(model_args, lmms_config)
    model = VideoEnvModel.create_from_arg_string("seed=3,max_steps=5.0", lmms_config)
    assert (model.seed, model.config.max_steps) == (3, 5)  # lmms-eval's own keys are fine
    from_python = VideoEnvModel(seed="4", max_steps="6")  # the Python API passes text as is
    assert (from_python.seed, from_python.config.max_steps) == (4, 6)


def test_bad_requests_are_recorded_and_every_result_stays_with_its_doc(tmp_path: Path) -> None:
    from lmms_eval.api.instance import Instance

    from benchmarks.lmms.model import VideoEnvModel

    video = tmp_path / "v.mp4"
    write_video(video, coded_frames(60), 30.0, gop=24)
    question = "Which?\nA. one\nB. two"
    cases = [  # (context, doc, what the reply's error says; None: answered)
        (question, {"video": str(video)}, None),
        (None, {"video": str(video)}, "context is not text"),  # a task's doc_to_text gave None
        ("Which?", {"video": str(video), "opts": {"A": "one", "B": "two"}}, "must be a list"),
        ("Which?", {"video": str(video), "opts": "A. one\nB. two"}, "must be a list"),
        (question, {"video": str(tmp_path / "missing.mp4")}, "no video file"),
        (question, {"video": str(video), "gt_intervals": [[float("nan"), 1.0]]}, "finite"),
        ("Which?", {"video": str(video), "opts": ["one", "two", "three"]}, None),
    ]
    model = VideoEnvModel(policy="falconeye", options_field="opts")
    model.task_dict = {"t": {"test": {i: doc for i, (_, doc, _) in enumerate(cases)}}}
    requests = [
        Instance(
            request_type="generate_until",
            arguments=(context, {}, lambda doc: [doc["video"]], i, "t", "test"),
            idx=0,
            metadata={"task": "t", "doc_id": i, "repeats": 1},
        )
        for i, (context, _, _) in enumerate(cases)
    ]
    replies = [r.text for r in model.generate_until(requests)]
    assert len(replies) == len(cases)
    for i, ((_, doc, error), reply) in enumerate(zip(cases, replies, strict=True)):
        block, _, answer = reply.removeprefix("<think>").partition("</think>")
        summary = json.loads(block)["video_env"]
        assert summary["sample_id"] == f"t/test/{i}"  # each summary names its own doc
        if error is None:
            letters = "ABC"[: len(doc.get("opts") or "AB")]
            assert summary["error"] is None and answer and answer in letters
        else:
            assert answer == "" and error in summary["error"]


def test_options_are_read_in_linear_time_from_an_enormous_prompt() -> None:
    import time

    text = "Q?\nA. x" + " " * 60_000 + "y\nB. z"
    started = time.perf_counter()
    assert parse_options(text)[1] == ("x" + " " * 60_000 + "y", "z")
    assert time.perf_counter() - started < 1.0  # quadratic backtracking took ~10 s


def test_a_final_response_the_env_did_not_produce_is_an_error_not_a_score() -> None:
    from lmms_eval.api.instance import Instance
    from lmms_eval.evaluator import _run_generate_until_agentic

    first, second = docs_for({"suite": "synth-tiny", "env": "zoom", "limit": 2})
    forged = json.dumps({"sample_id": first["sample_id"], "correct": True, "gtou": 1.0,
                         "reward": 9.0, "tool_calls": 1})  # fmt: skip

    class Model:  # replies the forged summary until lmms-eval's own step cap ends the loop
        is_simple = True

        def __init__(self) -> None:
            self.task_dict = {"t": {"test": {0: first}}}

        def generate_until(self, requests: list[Any]) -> list[str]:
            return [forged]

    args = ("ctx", {"max_agentic_steps": 2}, lambda doc: [], doc_to_text, 0, "t", "test")
    request = Instance(request_type="generate_until_agentic", arguments=args, idx=0,
                       metadata={"task": "t", "doc_id": 0, "repeats": 1})  # fmt: skip
    (final,) = _run_generate_until_agentic(Model(), [request])
    assert final == forged  # lmms-eval hands the model's own JSON reply to the scorer
    metrics = process_results(first, [final])
    assert metrics["accuracy"] == 0.0 and metrics["errors"] == 1.0 and metrics["reward"] == 0.0
    # a payload of the wrong types is an error too, not a crash of the whole evaluation
    assert (
        process_results(first, ['{"reward": "high", "gtou": "x", "tool_calls": [1]}'])["errors"]
        == 1.0
    )
    # the env's own summary scores, also re-serialised with lmms-eval's full-trace keys ...
    summary = json.loads(rollout(first))
    assert summary["correct"] is True
    assert process_results(first, [json.dumps(summary)])["accuracy"] == 1.0
    traced = {**json.loads(rollout(first)), "agentic_trace_mode": "full", "agentic_rounds": []}
    assert process_results(first, [json.dumps(traced)])["accuracy"] == 1.0
    # ... and lmms-eval's reasoning-tag strip (its CLI default) leaves it whole: a reply of
    # a model whose chat template opens the think block ends it with a bare "</think>"
    thinker = rollout(first, "I look.</think>")
    assert process_results(first, [_as_lmms_eval_scores(thinker)])["accuracy"] == 1.0
    # ... but not as another doc's result, nor edited
    final = rollout(first)
    assert process_results(second, [final])["errors"] == 1.0
    edited = json.dumps({**json.loads(final), "reward": 100.0})
    assert process_results(first, [edited])["reward"] == 0.0
    assert process_results(first, [json.dumps({**summary, "seal": "é"})])["errors"] == 1.0


def rollout(doc: dict[str, Any], thought: str = "") -> str:
    """One rollout of the first synth-tiny sample that answers right: its final response."""
    sample = load_suite("synth-tiny", limit=1)[0]
    evidence = sample.gt_intervals[0]
    reply = f'{thought}answer("{sample.answer}", [{evidence.start}, {evidence.end}])'
    *_, terminal, outputs, _ = doc_to_text(doc, previous_output=[reply], round_idx=1)
    assert terminal
    return str(outputs[-1])


def test_a_summary_scores_for_its_own_rollout_only() -> None:
    (doc,) = docs_for({"suite": "synth-tiny", "env": "zoom", "limit": 1})
    first, second = rollout(doc), rollout(doc)  # two rollouts of one doc (lmms-eval repeats)
    assert process_results(doc, [first])["accuracy"] == 1.0
    replayed = process_results(doc, [first])  # the first's summary as the second's response
    assert replayed["accuracy"] == 0.0 and replayed["errors"] == 1.0
    assert process_results(doc, [second])["accuracy"] == 1.0  # its own scores
    # the nonce is sealed: a summary given another rollout's nonce is no summary at all
    third = json.loads(rollout(doc))
    forged = json.dumps({**third, "rollout": json.loads(second)["rollout"]})
    assert process_results(doc, [forged])["errors"] == 1.0
    assert process_results(doc, [json.dumps(third)])["accuracy"] == 1.0


@pytest.mark.parametrize("env", ["zoom", "pacing"])
def test_a_doc_whose_video_cannot_be_read_ends_its_episode_not_the_run(
    env: str, tmp_path: Path
) -> None:
    from video_env.data import save_jsonl
    from video_env.types import VideoQA

    (tmp_path / "garbled.mp4").write_bytes(b"\x00not a video" * 64)
    sample = VideoQA(id="garbled", video=str(tmp_path / "garbled.mp4"), question="Which?",
                     options=("x", "y"), answer="A")  # fmt: skip
    save_jsonl([sample], tmp_path / "docs.jsonl", video_root=tmp_path)
    (doc,) = docs_for({"loader": "jsonl", "annotations": str(tmp_path / "docs.jsonl"),
                       "videos": str(tmp_path), "env": env})  # fmt: skip
    from benchmarks.lmms.agentic import doc_to_visual

    assert doc_to_visual(doc) == []  # lmms-eval calls these outside any try: no raise
    assert "could not start" in doc_to_text(doc)
    *_, terminal, outputs, info = doc_to_text(doc, previous_output=["x"], round_idx=1)
    assert terminal and "VideoDecodeError" in json.loads(outputs[-1])["error"]
    assert process_results(doc, outputs[-1:])["errors"] == 1.0


def _as_lmms_eval_scores(final: str) -> str:
    """A final response as lmms-eval hands it to the scorer: the task's reasoning tags (or
    the CLI's default ones) stripped."""
    from unittest import mock

    import yaml
    from lmms_eval.__main__ import parse_eval_args
    from lmms_eval.api.reasoning import parse_reasoning_tags_config, strip_reasoning_tags

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: None)
    template = yaml.load((Path(TASKS_DIR) / "_video_env_template_yaml").read_text(), Loader)
    with mock.patch.object(sys, "argv", ["lmms_eval"]):
        cli = parse_eval_args()[1].reasoning_tags  # the CLI's default
    tags = parse_reasoning_tags_config(cli_value=cli, task_value=template.get("reasoning_tags"))
    return final if tags is None else strip_reasoning_tags(final, tags)


def test_the_pages_offline_block_runs_as_printed_and_prints_its_table() -> None:
    """``docs/lmms-eval.md`` opens with a command that runs offline: it does, as shown."""
    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "lmms-eval.md").read_text(encoding="utf-8")
    section = page.split("## Offline first", 1)[1]
    command = section.split("```bash\n", 1)[1].split("```", 1)[0]
    table = section.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", command], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert all(line in done.stdout.splitlines() for line in table), done.stdout[-3000:]
