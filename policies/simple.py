"""The simplest baselines: random, blind LLM, and one VLM call on the whole video."""

from __future__ import annotations

from typing import Any

import numpy as np

from policies import prompts
from policies.base import Policy
from policies.observations import evaluations, parse_options
from policies.reasoning import JsonCaller
from video_env._seeding import stable_seed
from video_env.actions import AnswerAction, EvaluateAction
from video_env.backends.llm.base import LLM
from video_env.envs import ENV_KINDS
from video_env.types import OPTION_LETTERS, Interval


def _duration(observation: dict[str, Any]) -> float:
    if "duration" in observation:
        return float(observation["duration"][0])
    return float(observation["window"][1])  # Pacing: what has been seen so far


def episode_rng(seed: int, info: dict[str, Any]) -> np.random.Generator:
    """A generator seeded per sample and episode seed (the same draws in every process)."""
    return np.random.default_rng(stable_seed(seed, info.get("sample_id"), info.get("episode_seed")))


def random_option(rng: np.random.Generator, n_options: int) -> str:
    """A uniformly drawn option letter (``"unknown"`` for an open question)."""
    return OPTION_LETTERS[int(rng.integers(n_options))] if n_options else "unknown"


class RandomPolicy(Policy):
    """Answers at once: a random option (open questions: "unknown") and a random window.

    Its draws are seeded per episode from ``seed``, the sample id and the env's episode
    seed, so a record does not depend on which episodes the same policy object ran before
    (any executor order), and replicas with other seeds draw anew.

    Args:
        seed: Seed of the policy's own random draws.
        window_s: Length of the random window.
    """

    name = "random"
    env_kinds = ENV_KINDS

    def __init__(self, seed: int = 0, window_s: float = 60.0) -> None:
        super().__init__()
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.window_s = window_s

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Seed this episode's draws."""
        self.rng = episode_rng(self.seed, info)

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Answer immediately."""
        options = parse_options(observation["options"])
        text = random_option(self.rng, len(options))
        duration = _duration(observation)
        length = min(self.window_s, duration)
        start = float(self.rng.uniform(0, max(0.0, duration - length)))
        return AnswerAction(text, Interval(start, start + length))


class BlindLLMPolicy(Policy):
    """Answers from the question alone, without looking at the video (an LLM prior)."""

    name = "blind-llm"
    env_kinds = ENV_KINDS
    offline = False

    def __init__(self, llm: LLM) -> None:
        super().__init__(llm)
        self.caller = JsonCaller(llm)

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Ask the LLM, answer at once (no window: the video was never seen)."""
        options = parse_options(observation["options"])
        prompt = prompts.render(
            "baselines/blind",
            question=observation["question"],
            options_block=prompts.options_block(options),
        )
        reply = self.caller.ask(prompt, ["answer"])
        text = str(reply["answer"]).strip() if reply else ""
        return AnswerAction(text or (OPTION_LETTERS[0] if options else "unknown"))


class UniformPolicy(Policy):
    """The plain-VLM row: one VLM call on frames sampled over the whole video (Zoom env).

    The env's sampling rule decides the frames (0.5 fps, at most 256); the answer's window
    is the whole video.
    """

    name = "uniform"
    env_kinds = ("zoom",)

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Evaluate the whole video once, then answer with what the VLM said."""
        done = evaluations(observation)
        whole = Interval(0.0, _duration(observation))
        if not done:
            return EvaluateAction((whole,))
        return AnswerAction(done[-1].answer or "unknown", done[-1].window)
