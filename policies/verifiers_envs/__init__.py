"""The environments as verifiers environments (``vf.MultiTurnEnv``; ``verifiers`` extra).

Every registered env kind is a paradigm (:data:`PARADIGMS`): ``build_environment(kind)``;
the three first have a module with verifiers' entry point, ``load_environment(**kwargs)``:
``vf.load_environment("policies.verifiers_envs.pacing")`` (or ``.zoom``,
``.clip_query``). A rollout is one episode of the video-env environment: the model's
reply each turn is parsed by the env's own text action set (an unreadable reply is the
env's invalid action, with its penalty), the env's reward is the rubric's reward (its
``reward_parts`` and correctness are metrics), and the episode ends when the env says so
or at ``max_turns`` (then unanswered: reward 0, as the env's ``abandon``).

Prompts (:mod:`policies.verifiers_envs.render`): Pacing is VideoScout's (a fresh chat every
turn — system prompt, the window's frames as images, the agent's notes, the question — as
``docs/fidelity.md`` describes); every other kind shows its text action set's documentation
and the env's own rendering of each observation (``observation_text``, and
``observation_images`` as images), the chat growing turn by turn.

With ``base_url`` the episodes run on a ``video-env serve`` server instead of in-process.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from policies.verifiers_envs.render import env_chat
from video_env._optional import require
from video_env.envs import ENV_CLASSES, ENV_IDS_BY_KIND
from video_env.envs.arguments import DEFAULT_SUITE
from video_env.envs.pacing_rules import PacingRules
from video_env.errors import ConfigError
from video_env.synth.suites import load_suite
from video_env.types import VideoQA

__all__ = ["PARADIGMS", "build_environment"]

#: Paradigm (an env kind) → (environment id, env class name).
PARADIGMS = {kind: (ENV_IDS_BY_KIND[kind], cls.__name__) for kind, cls in ENV_CLASSES.items()}
_PURPOSE = "verifiers' environments"


def build_environment(
    paradigm: str,
    *,
    dataset: Sequence[VideoQA] | str = DEFAULT_SUITE,
    limit: int | None = None,
    max_turns: int = 16,
    rules: PacingRules | None = None,
    base_url: str | None = None,
    seed: int = 0,
    **env_kwargs: Any,
) -> Any:
    """A ``vf.MultiTurnEnv`` running ``paradigm``'s environment (see the module docstring).

    Args:
        paradigm: An env kind (``"pacing"``, ``"zoom"``, ``"clip_query"``...).
        dataset: A suite name or samples (one rollout input each).
        limit: Use only the first ``limit`` samples.
        max_turns: Model turns per episode at most.
        rules: Pacing rules (default: the paper's).
        base_url: A ``video-env serve`` server of the same env and samples.
        seed: Seed of every env reset.
        **env_kwargs: Further arguments of the environment.

    Raises:
        ConfigError: For an unknown paradigm.
    """
    require("verifiers", "verifiers", _PURPOSE)
    datasets = require("datasets", "train", _PURPOSE)
    if paradigm not in PARADIGMS:
        raise ConfigError(f"unknown paradigm {paradigm!r}; known: {sorted(PARADIGMS)}")
    samples = load_suite(dataset) if isinstance(dataset, str) else list(dataset)
    samples = samples[:limit] if limit is not None else samples
    if not samples:
        raise ConfigError("the dataset has no samples")
    rows = [
        {
            "prompt": [{"role": "user", "content": sample.question}],
            "answer": "",  # the env grades: no answer travels with the rollout
            "info": {"sample_index": i, "sample_id": sample.id},
        }
        for i, sample in enumerate(samples)
    ]
    # Pacing: VideoScout's prompt and rules; the turns are verifiers' own (``max_turns``,
    # -1: unlimited), not the episode's cap
    chat = env_chat(ENV_CLASSES[paradigm], env_kwargs, rules)
    from policies.verifiers_envs.env import VideoMultiTurnEnv

    env_id, env_class = PARADIGMS[paradigm]
    return VideoMultiTurnEnv(
        paradigm=paradigm,
        env_id=env_id,
        env_class=env_class,
        samples=samples,
        chat=chat,
        base_url=base_url,
        seed=seed,
        dataset=datasets.Dataset.from_list(rows),
        max_turns=max_turns,
    )
