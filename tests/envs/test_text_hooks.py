"""The text-agent hooks every env kind implements: its text actions and its observations as text.

The tests over ``ENV_CLASSES`` cover every registered kind, a new one included.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from video_env.actions import ClipQueryActionSet, PacingActionSet, ZoomActionSet
from video_env.envs import ENV_CLASSES, ENV_IDS_BY_KIND, ClipQueryEnv, PacingEnv, ZoomEnv
from video_env.envs.observation_text import clip_query_text, zoom_text
from video_env.envs.text_hooks import TextAgentHooks
from video_env.synth.suites import load_suite
from video_env.wrappers import TextActions, default_action_set
from video_env.wrappers.text_actions import parse_text_action

KINDS = sorted(ENV_CLASSES)


@pytest.fixture(params=KINDS)
def kind_env(request: pytest.FixtureRequest) -> Any:
    """An env of each registered kind with its defaults, reset; and its first observation."""
    env = ENV_CLASSES[request.param]()
    observation, _ = env.reset(seed=0)
    yield env, observation
    env.close()


def test_every_kind_documents_its_text_actions(kind_env: Any) -> None:
    env, _ = kind_env
    actions = env.text_action_set()
    assert actions.describe().strip() and actions.example().strip()
    prompt = env.system_prompt()
    assert actions.describe() in prompt and actions.example() in prompt


def test_every_kind_shows_its_observation_as_text_with_the_question(kind_env: Any) -> None:
    env, observation = kind_env
    text = env.observation_text(observation)
    assert isinstance(text, str) and str(observation["question"]) in text


def test_every_kinds_images_are_rgb_frames(kind_env: Any) -> None:
    env, observation = kind_env
    for frame in env.observation_images(observation):
        assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3


def test_every_kinds_example_action_is_one_its_parser_reads(kind_env: Any) -> None:
    env, _ = kind_env
    actions = env.text_action_set()
    actions.parse(actions.example())  # no ActionParseError


@pytest.mark.parametrize("kind", KINDS)
def test_the_text_actions_wrapper_takes_the_hooks_action_set(kind: str) -> None:
    env = gym.make(ENV_IDS_BY_KIND[kind], disable_env_checker=True)
    expected = type(env.unwrapped.text_action_set())  # type: ignore[attr-defined]
    assert type(default_action_set(env)) is expected
    assert type(TextActions(env).action_set) is expected
    env.close()


@pytest.mark.parametrize(
    ("env_class", "action_set"),
    [(PacingEnv, PacingActionSet), (ZoomEnv, ZoomActionSet), (ClipQueryEnv, ClipQueryActionSet)],
)
def test_each_kind_returns_its_own_action_set(env_class: type, action_set: type) -> None:
    assert type(env_class().text_action_set()) is action_set


def test_a_non_video_env_has_no_default_action_set() -> None:
    env = gym.make("CartPole-v1")
    with pytest.raises(TypeError, match="no video-env environment"):
        default_action_set(env)


def test_the_base_hooks_say_which_are_missing() -> None:
    hooks = TextAgentHooks()
    with pytest.raises(NotImplementedError, match="text_action_set"):
        hooks.text_action_set()
    with pytest.raises(NotImplementedError, match="observation_text"):
        hooks.observation_text({})
    assert hooks.observation_images({}) == []


def _window(a: float, b: float) -> np.ndarray:
    return np.array([a, b], dtype=np.float32)


def test_zoom_text_is_the_verifiers_rendering() -> None:
    observation = {
        "question": "Which colour?",
        "options": "A. red\nB. blue",
        "duration": np.array([120.0]),
        "budget_left": np.array([3]),
        "clips": ({"window": _window(0, 60), "caption": "a red ball"},),
        "evaluations": ({"window": _window(0, 10), "answer": "A", "confidence": np.array([0.8])},),
        "last_action_error": "no action found",
    }
    assert zoom_text(observation) == (
        "Question: Which colour?\nOptions:\nA. red\nB. blue\n"
        "Video: 120 s. Evaluations left: 3.\nCaptions of the clips:\n"
        "[0.0, 60.0] s: a red ball\nEvaluations so far:\n[0.0, 10.0] s: A (confidence 0.80)\n"
        "Your last reply was invalid: no action found"
    )


def test_clip_query_text_is_the_verifiers_rendering() -> None:
    observation = {
        "question": "What happens?",
        "options": "",
        "duration": np.array([90.0]),
        "rounds_left": np.array([2]),
        "frames_left": np.array([27]),
        "segments": ({"window": _window(0, 45)}, {"window": _window(45, 90)}),
        "frames": ({"time": np.array([12.0]), "caption": "a dog"},),
        "last_action_error": "",
    }
    assert clip_query_text(observation) == (
        "Question: What happens?\nVideo: 90 s. Query rounds left: 2, frames left: 27.\n"
        "Segments: 1: [0.0, 45.0] s; 2: [45.0, 90.0] s\nFrames seen:\n12.0 s: a dog"
    )


def test_pacing_text_and_images_show_the_window() -> None:
    samples = load_suite("synth-tiny", limit=1)
    env = PacingEnv(samples, pixel_observations=True)
    observation, _ = env.reset(seed=0)
    text = env.observation_text(observation)
    assert "Shown: chunks 1-1" in text and "Your notes: (empty)" in text
    assert "VLM:" in text  # the default sensor
    frames = env.observation_images(observation)
    size = env.turn_spec.size
    assert len(frames) == int(observation["n_frames"]) > 0
    assert all(f.shape == (size.height, size.width, 3) for f in frames)
    observation, *_ = env.step(parse_text_action(env.text_action_set(), "speed(9x)"))
    assert "Your last reply was invalid" in env.observation_text(observation)
    env.close()


def test_pacing_without_pixels_shows_no_images() -> None:
    env = PacingEnv(load_suite("synth-tiny", limit=1))
    observation, _ = env.reset(seed=0)
    assert env.observation_images(observation) == []
    env.close()
