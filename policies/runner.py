"""The one episode loop everything uses: benchmarks, notebooks and tests."""

from __future__ import annotations

import time
import traceback
from typing import Any

import gymnasium as gym

from policies.base import Policy, env_kind
from video_env.errors import ContextExceeded
from video_env.provenance import object_labels, record_flags, record_labels

#: Steps after which an episode is abandoned (a policy that never answers).
DEFAULT_MAX_STEPS = 200


def run_episode(
    env: gym.Env[Any, Any],
    policy: Policy,
    seed: int | None = None,
    *,
    options: dict[str, Any] | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
) -> dict[str, Any]:
    """Run one episode and return its record.

    The record is the env's ``info["episode"]`` plus the policy's costs for this episode
    (``llm_calls``, ``prompt_tokens``, ``completion_tokens``; per step in
    ``trajectory[i]["llm"]``; ``llm_reply_failures``: replies it could not use,
    ``llm_replies_used``: replies it used),
    ``money_usd`` (the policy's paid LLM calls plus the perception's paid API calls,
    ``perception_money_usd``), ``policy``,
    ``env``, ``seed``, ``wall_s`` and ``error``; the labels (``simulated``, ``pixel_vlm``,
    ``random_weights``) and frames of the models the policy perceives with itself
    (:attr:`~policies.base.Policy.perceivers`) join the env's. An exception raised by the
    policy or a backend does not propagate: the episode is abandoned and the record
    carries the error and its traceback, so a benchmark goes on. A policy whose chat no
    longer fits its model (:class:`~video_env.errors.ContextExceeded`) ends the episode
    unanswered, ``ended_by`` ``context_full``, without an error.

    Args:
        env: A video-env environment (possibly wrapped).
        policy: The policy; it must support the env.
        seed: Seed of the env's reset.
        options: Reset options (e.g. ``{"sample": s}`` or ``{"index": i}``).
        max_steps: Steps after which the episode is abandoned.

    Raises:
        ValueError: If the policy does not support the env.
    """
    if not policy.supports(env):
        raise ValueError(f"policy {policy.name!r} does not support the {env_kind(env)} env")
    started = time.perf_counter()
    usage_before, failures_before = policy.usage, policy.reply_failures
    used_before = policy.replies_used
    base: Any = env.unwrapped
    record: dict[str, Any] | None = None
    error = tb = None
    ended: str | None = None
    steps = 0
    step_costs: list[dict[str, Any]] = []  # the policy's own (LLM) cost of each step
    try:
        obs, info = env.reset(seed=seed, options=options)
        policy.reset(obs, info)
        while steps < max_steps:
            before = policy.usage
            action = policy.act(obs, info)
            step_costs.append(_llm_part(policy.usage - before))
            obs, _, terminated, truncated, info = env.step(action)
            steps += 1
            if terminated or truncated:
                # a TimeLimit truncation carries no record: close the episode ourselves
                record = dict(info["episode"]) if "episode" in info else base.abandon("truncated")
                break
    except ContextExceeded:  # the policy's chat is full: unanswered, not a failure
        ended = "context_full"
    except Exception as exc:
        error, tb = f"{type(exc).__name__}: {exc}", traceback.format_exc()
    if record is None:
        try:
            record = base.abandon(ended or ("error" if error else "max_steps"))
        except RuntimeError:  # the reset itself failed: no episode to close
            perception = getattr(base, "perception", None)
            record = {
                "sample_id": _sample_id(base, options),
                "answer": None,
                "correct": False,  # a failure counts as wrong, as any failed episode
                "ended_by": "error",
                # labelled by the env's backends, as its episodes are (never "real" by default)
                **record_flags(perception.labels if perception is not None else ()),
                **(base.record_fields() if hasattr(base, "record_fields") else {}),
            }
    _label_perceivers(record, policy)
    cost = policy.usage - usage_before
    for step, llm in zip(record.get("trajectory") or [], step_costs, strict=False):
        step["llm"] = llm
    record.update(
        policy=policy.name,
        env=env_kind(env),
        seed=seed,
        llm_calls=cost.llm_calls,
        prompt_tokens=cost.prompt_tokens,
        completion_tokens=cost.completion_tokens,
        money_usd=cost.money_usd + float(record.get("perception_money_usd") or 0.0),
        llm_reply_failures=policy.reply_failures - failures_before,
        llm_replies_used=policy.replies_used - used_before,
        wall_s=time.perf_counter() - started,
        error=error,
        traceback=tb,
    )
    return record


def _label_perceivers(record: dict[str, Any], policy: Policy) -> None:
    """Add the labels of the models the policy perceives with to the env's.

    Every provenance label of such a model joins the episode's (:mod:`video_env.provenance`):
    a simulated model makes it ``simulated`` (and so neither ``pixel_vlm`` nor
    ``pixel_real``, as the env labels its own), the pixel VLM adds ``pixel_vlm``, a
    random-weights folder ``random_weights``. Their frames count too: a perceiving
    policy's model reads every frame it is shown (``frames_shown``), on top of what the
    env's perception read (``frames``); the env's reward is left as it was computed.
    """
    if policy.perceivers:
        record["frames"] = int(record.get("frames") or 0) + int(record.get("frames_shown") or 0)
    labels = record_labels(record).union(*(object_labels(m) for m in policy.perceivers))
    record.update(record_flags(labels))


def _llm_part(cost: Any) -> dict[str, Any]:
    return {
        "llm_calls": cost.llm_calls,
        "prompt_tokens": cost.prompt_tokens,
        "completion_tokens": cost.completion_tokens,
        "money_usd": cost.money_usd,
    }


def _sample_id(env: Any, options: dict[str, Any] | None) -> str | None:
    options = options or {}
    sample = options.get("sample")
    if sample is None and "index" in options:
        try:
            sample = env.samples[options["index"]]
        except (AttributeError, IndexError, TypeError):
            return None
    return getattr(sample, "id", None)
