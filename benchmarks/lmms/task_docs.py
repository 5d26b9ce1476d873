"""The docs of a video-env task: one JSON-ready row per sample, and the samples behind them.

A task's ``dataset_kwargs`` name the samples (a synthetic suite, or a dataset loader with its
annotations and videos, ``$VARS`` expanded) and the episode (env kind, seed, turns, env
settings). Each doc carries them as ``dataset`` and ``episode`` (JSON text), so that the
task's functions, which lmms-eval hands the doc alone, can find the sample and build the env.
The doc's ground truth (``answer``, ``gt_intervals``) is for the scorer; what the model sees is
the env's observations only.
"""

from __future__ import annotations

import json
import os
from typing import Any

from benchmarks.config import ENV_KINDS
from video_env.envs.arguments import DEFAULT_SUITE
from video_env.errors import ConfigError
from video_env.synth.world import SynthVideo
from video_env.types import VideoQA

__all__ = ["DATASET_KEYS", "EPISODE_KEYS", "docs_for", "episode_settings", "samples"]

#: ``dataset_kwargs`` that name the samples.
DATASET_KEYS = ("suite", "loader", "annotations", "videos", "limit", "standin_missing_videos")
#: ``dataset_kwargs`` that set the episode.
EPISODE_KEYS = ("env", "seed", "max_turns", "env_kwargs")
#: ``max_agentic_steps`` of the task template (``tasks/_video_env_template_yaml``).
MAX_AGENTIC_STEPS = 64

_SAMPLES: dict[str, list[VideoQA]] = {}


def docs_for(dataset_kwargs: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The task's docs, in sample order.

    Raises:
        ConfigError: For an unknown key, env kind, or a dataset without samples.
    """
    kwargs = {k: _expand(v) for k, v in (dataset_kwargs or {}).items()}
    unknown = set(kwargs) - set(DATASET_KEYS) - set(EPISODE_KEYS)
    if unknown:
        known = [*DATASET_KEYS, *EPISODE_KEYS]
        raise ConfigError(f"unknown dataset_kwargs {sorted(unknown)}; known: {known}")
    if "loader" in kwargs and not kwargs["loader"]:
        raise ConfigError("the task names no loader: set VIDEO_ENV_LMMS_LOADER (e.g. jsonl)")
    dataset = json.dumps({k: kwargs[k] for k in DATASET_KEYS if k in kwargs}, sort_keys=True)
    episode = json.dumps(episode_settings(kwargs), sort_keys=True)
    found = samples(dataset)
    if not found:
        raise ConfigError(f"the dataset {dataset} has no samples")
    return [_doc(i, s, dataset, episode) for i, s in enumerate(found)]


def episode_settings(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The episode's settings, defaults filled in.

    Raises:
        ConfigError: For an unknown env kind or a bad number of turns.
    """
    env = str(kwargs.get("env", "zoom"))
    if env not in ENV_KINDS:
        raise ConfigError(f"unknown env {env!r}; known: {list(ENV_KINDS)}")
    max_turns = int(kwargs.get("max_turns", 16))
    if not 1 <= max_turns < MAX_AGENTIC_STEPS:
        raise ConfigError(
            f"max_turns must be from 1 to {MAX_AGENTIC_STEPS - 1} (below the tasks' "
            f"max_agentic_steps, so the env ends an episode first), got {max_turns}"
        )
    env_kwargs = dict(kwargs.get("env_kwargs") or {})
    seed = int(kwargs.get("seed", 0))
    return {"env": env, "seed": seed, "max_turns": max_turns, "env_kwargs": env_kwargs}


def samples(dataset: str) -> list[VideoQA]:
    """The samples a doc's ``dataset`` names (loaded once per process)."""
    if dataset not in _SAMPLES:
        _SAMPLES[dataset] = _load(json.loads(dataset))
    return _SAMPLES[dataset]


def _load(spec: dict[str, Any]) -> list[VideoQA]:
    limit = int(spec["limit"]) if spec.get("limit") is not None else None
    if spec.get("loader"):
        from video_env import data

        if not spec.get("annotations"):
            raise ConfigError(f"the {spec['loader']} loader needs dataset_kwargs.annotations")
        videos = spec.get("videos") or None
        return list(data.load(spec["loader"], spec["annotations"], videos, limit=limit))
    from video_env.synth import load_suite

    return load_suite(str(spec.get("suite", DEFAULT_SUITE)), limit=limit)


def _doc(index: int, sample: VideoQA, dataset: str, episode: str) -> dict[str, Any]:
    video = sample.video
    return {
        "sample_index": index,
        "sample_id": sample.id,
        "question": sample.question,
        "options": list(sample.options) if sample.options is not None else None,
        "answer": sample.answer,
        "gt_intervals": [iv.to_list() for iv in sample.gt_intervals],
        "category": sample.category,
        "source": sample.source,
        "video": f"synthetic:{video.id}" if isinstance(video, SynthVideo) else str(video),
        "dataset": dataset,
        "episode": episode,
    }


def _expand(value: Any) -> Any:
    """``$VARS`` expanded; a value naming an unset variable is ``None``."""
    if isinstance(value, str):
        expanded = os.path.expandvars(value)
        return None if "$" in expanded or not expanded else expanded
    return value
