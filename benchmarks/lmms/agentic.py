"""The envs as lmms-eval ``generate_until_agentic`` tasks: the step function and the scorer.

lmms-eval's agentic loop asks the model, then calls the task's ``doc_to_text`` with the
model's outputs so far (``previous_output``), the round and the previous round's info. Here
that call is one env step: the model's last reply is parsed by the env's text action set (an
unreadable reply is the env's invalid action, with its penalty), and the next context is the
next observation in the env kind's chat (:func:`~policies.verifiers_envs.render.env_chat`:
any kind's own text rendering, the transcript growing; Pacing: VideoScout's fresh prompt each
turn), the observation's frames as the round's images. The live env travels in the
round info (``env``, never logged: lmms-eval logs only its ``state`` and counters). When the
episode ends (an answer, the env's own end, ``max_turns``, or an error) the final response is
the episode's summary as JSON, which :func:`process_results` scores. The summary is sealed (an
HMAC of its scored fields, its doc and a nonce of its rollout, keyed per process), and each
rollout's summary scores once: lmms-eval hands the scorer the model's own last reply when its
loop ends first (``max_agentic_steps``), and a reply that looks like a summary, another doc's
summary, or another rollout's summary of the same doc (a repeat) must score as an error, not as
the env's grade. lmms-eval scores each rollout's final response once. A doc
whose episode cannot start (an unreadable video) gets a first prompt saying so, and its first
step records the error: lmms-eval builds the first prompts outside any ``try``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from loguru import logger  # type: ignore[import-untyped, import-not-found, unused-ignore]
from PIL import Image

from benchmarks.lmms.episodes import summarise
from benchmarks.lmms.task_docs import samples
from policies.verifiers_envs.render import EnvChat, env_chat
from video_env.envs import ENV_CLASSES
from video_env.errors import DatasetError, VideoDecodeError
from video_env.types import SampleError
from video_env.wrappers.text_actions import default_action_set, parse_text_action

__all__ = ["doc_to_target", "doc_to_text", "doc_to_visual", "mean_known", "process_results"]

Rendered = tuple[str, list[Image.Image]]

#: The summary fields :func:`process_results` reads: what the seal covers.
SCORED_FIELDS = ("correct", "gtou", "reward", "tool_calls", "invalid_steps", "frames",
                 "perception_calls", "simulated", "error")  # fmt: skip
#: This process's seal key: lmms-eval scores in the process that ran the episodes.
_SEAL_KEY = secrets.token_bytes(32)
#: The rollouts whose summaries were sealed and not yet scored (their nonces): a summary
#: scores once, so a copy of it as another rollout's final response is refused.
_UNSCORED: set[str] = set()
_UNSCORED_LOCK = threading.Lock()


def doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
    """The first round's images: the first observation's frames (none where the chat shows none)."""
    if not _chat(doc).shows_images:
        return []
    return _first(doc)[1]


def doc_to_target(doc: dict[str, Any]) -> str:
    """The answer (``""`` where the dataset has none)."""
    return str(doc.get("answer") or "")


def doc_to_text(
    doc: dict[str, Any],
    lmms_eval_specific_kwargs: dict[str, Any] | None = None,
    previous_output: list[str] | None = None,
    round_idx: int | None = None,
    previous_round_info: dict[str, Any] | None = None,
) -> Any:
    """The first prompt (``round_idx`` None), else one env step with the model's last reply.

    Returns:
        The first prompt's text, or lmms-eval's agentic 5-tuple ``(visuals, next_context,
        terminal, outputs, round_info)``; on the last round ``outputs`` ends with the
        episode's summary as JSON.
    """
    if round_idx is None:
        return _first(doc)[0]
    outputs = list(previous_output or [])
    info = previous_round_info
    try:
        if info is None:  # the first reply: start the episode the first prompt showed
            env, observation = _start(doc)
            try:
                info = _round_info(env, _render(doc, env, observation)[0])
            except BaseException:
                env.close()  # not yet in the round's info: _finish could not close it
                raise
        return _step(doc, info, outputs, int(round_idx))
    except Exception as exc:  # a failing env or backend ends this episode, not the run
        return _finish(doc, info or {}, outputs, None, f"{type(exc).__name__}: {exc}")


def _step(doc: dict[str, Any], info: dict[str, Any], outputs: list[str], round_idx: int) -> Any:
    env = info["env"]
    reply = outputs[-1] if outputs else ""
    observation, _, terminated, truncated, step_info = env.step(
        parse_text_action(default_action_set(env), reply)
    )
    error = str(observation.get("last_action_error") or "")
    info["tool_calls"] += 1
    info["invalid_steps" if error else "valid_tool_calls"] += 1
    info["last_tool_result"] = error or "ok"
    if terminated or truncated:
        return _finish(doc, info, outputs, step_info.get("episode"), None)
    if round_idx >= json.loads(doc["episode"])["max_turns"]:
        return _finish(doc, info, outputs, env.unwrapped.abandon("max_turns"), None)
    text, images = _render(doc, env, observation)
    if not _chat(doc).fresh_each_turn:  # the transcript grows
        text = info["transcript"] = f"{info['transcript']}\n\nYour reply: {reply}\n\n{text}"
    info["state"] = {"turn": info["tool_calls"], "last_action_error": error}
    return images, text, False, outputs, info


def _finish(
    doc: dict[str, Any],
    info: dict[str, Any],
    outputs: list[str],
    record: dict[str, Any] | None,
    error: str | None,
) -> Any:
    """The terminal 5-tuple: the env closed, the summary as the final output."""
    env = info.pop("env", None)
    if record is None and env is not None:
        try:
            record = env.unwrapped.abandon("error")
        except RuntimeError:  # the reset itself failed, or the episode had ended
            record = None
    if env is not None:
        env.close()
    summary = summarise(record or {}, has_ground_truth=bool(doc.get("gt_intervals")))
    summary.update(
        sample_id=doc["sample_id"],
        error=error or summary.get("error"),
        tool_calls=info.get("tool_calls", 0),
        valid_tool_calls=info.get("valid_tool_calls", 0),
        invalid_steps=info.get("invalid_steps", 0),
        replies=outputs,
    )
    summary["rollout"] = secrets.token_hex(16)
    summary["seal"] = _seal(doc, summary)
    with _UNSCORED_LOCK:
        _UNSCORED.add(summary["rollout"])
    info["state"] = {"turn": info.get("tool_calls", 0), "ended_by": summary.get("ended_by")}
    return None, None, True, [*outputs[:-1], json.dumps(summary)], info


def _seal(doc: dict[str, Any], summary: dict[str, Any]) -> str:
    """The HMAC of a summary's scored fields, its doc and its rollout's nonce.

    The doc counts by its sample, dataset and episode settings.
    """
    scored = {key: summary.get(key) for key in SCORED_FIELDS}
    owner = [doc["sample_index"], doc["sample_id"], doc["dataset"], doc["episode"],
             summary.get("rollout")]  # fmt: skip
    message = json.dumps([owner, scored], sort_keys=True).encode()
    return hmac.new(_SEAL_KEY, message, hashlib.sha256).hexdigest()


def _sealed(doc: dict[str, Any], payload: dict[str, Any]) -> bool:
    """Whether ``payload`` is the summary :func:`_finish` sealed for this doc, unedited."""
    seal = payload.get("seal")
    if not isinstance(seal, str) or not seal.isascii():  # compare_digest takes ASCII only
        return False
    return hmac.compare_digest(seal, _seal(doc, payload))


def _first_scoring(payload: dict[str, Any]) -> bool:
    """Whether this sealed summary's rollout is scored for the first time.

    It then is not any more: a second scoring is another rollout's final response that
    repeats it.
    """
    with _UNSCORED_LOCK:
        if payload.get("rollout") not in _UNSCORED:
            return False
        _UNSCORED.discard(payload["rollout"])
        return True


def _first(doc: dict[str, Any]) -> Rendered:
    """The first prompt; where the episode cannot start, a prompt saying why (no raise)."""
    try:
        env, observation = _start(doc)
        try:
            return _render(doc, env, observation)
        finally:
            env.close()
    except (VideoDecodeError, DatasetError, SampleError, OSError) as exc:  # the doc's fault
        # (a ConfigError, the run's, still stops it before any model call); the first step
        # meets the error again and records it
        logger.warning(f"video_env task: doc {doc.get('sample_id')} cannot start: {exc}")
        return f"This episode could not start ({type(exc).__name__}: {exc}).", []


def _chat(doc: dict[str, Any]) -> EnvChat:
    """The doc's env kind's chat (its env arguments included)."""
    settings = json.loads(doc["episode"])
    return env_chat(ENV_CLASSES[settings["env"]], settings["env_kwargs"])


def _start(doc: dict[str, Any]) -> tuple[gym.Env[Any, Any], dict[str, Any]]:
    """A fresh env of the doc's sample, reset with the episode's seed."""
    settings = json.loads(doc["episode"])
    dataset = json.loads(doc["dataset"])
    env = ENV_CLASSES[settings["env"]](
        samples(doc["dataset"]),
        standin_missing_videos=bool(dataset.get("standin_missing_videos", False)),
        **_chat(doc).env_kwargs,
    )
    try:
        observation, _ = env.reset(seed=settings["seed"], options={"index": doc["sample_index"]})
    except Exception:
        env.close()
        raise
    return env, observation


def _round_info(env: gym.Env[Any, Any], transcript: str) -> dict[str, Any]:
    return {
        "env": env,
        "transcript": transcript,
        "state": {"turn": 0},
        "tool_calls": 0,
        "valid_tool_calls": 0,
        "invalid_steps": 0,
        "last_tool_result": None,
    }


def _render(doc: dict[str, Any], env: Any, observation: dict[str, Any]) -> Rendered:
    """An observation as a prompt's text (the system prompt first) and images."""
    images: list[Image.Image] = []

    def frames(pixels: Sequence[np.ndarray]) -> list[dict[str, Any]]:
        images.extend(Image.fromarray(np.asarray(p, dtype=np.uint8)) for p in pixels)
        return [{"type": "text", "text": f"<{len(pixels)} frames, attached as images>"}]

    texts = []
    for message in _chat(doc).first_messages(env.unwrapped, observation, frames):
        content = message["content"]
        parts = content if isinstance(content, list) else [{"text": content}]
        texts.append("\n".join(str(p.get("text", "")) for p in parts))
    return "\n\n".join(texts), images


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    """Metrics of one rollout: accuracy, GToU (``None`` without ground truth), cost.

    A final response that is not this doc's sealed summary (the model's own reply, lmms-eval's
    fallback, another doc's summary, an edited one), or a summary already scored (another
    rollout's, repeated), scores as an error: wrong, no reward.
    """
    raw = results[0] if results else ""
    try:
        payload = json.loads(raw) if isinstance(raw, str) else {}
    except (ValueError, RecursionError):  # not JSON, a 5,000-digit number, deep nesting
        payload = {}
    payload = payload if isinstance(payload, dict) else {}
    if not _sealed(doc, payload):
        payload = {"error": "the final response is no summary of this doc's episode"}
    elif not _first_scoring(payload):
        payload = {"error": "the final response repeats a summary already scored"}
    gtou = payload.get("gtou")
    return {
        "accuracy": float(bool(payload.get("correct"))),
        "gtou": float(gtou) if gtou is not None and doc.get("gt_intervals") else None,
        "reward": float(payload.get("reward") or 0.0),
        "turns": float(payload.get("tool_calls") or 0),
        "invalid_actions": float(payload.get("invalid_steps") or 0),
        "frames": float(payload.get("frames") or 0),
        "perception_calls": float(payload.get("perception_calls") or 0),
        "simulated_perception": float(bool(payload.get("simulated"))),
        "errors": float(bool(payload.get("error")) or "correct" not in payload),
    }


def mean_known(values: list[float | None]) -> float | None:
    """The mean of the values that exist (GToU of samples with ground truth)."""
    known = [float(v) for v in values if v is not None]
    return sum(known) / len(known) if known else None
