"""VideoAgent's offline reasoner on the released layout of frames and segments."""

import itertools
from typing import Any

import numpy as np

from policies.videoagent import VideoAgentPolicy
from video_env.actions import QueryAction, SegmentQuery

FRAMES = {
    0.0: "a kitchen with white cabinets",
    40.0: "a living room with a sofa",
    80.0: "a busy city street with a street sign",
    120.0: "a park with a fountain",
    160.0: "a parking lot at night",
}


def observation() -> dict[str, Any]:
    times = sorted(FRAMES)
    return {
        "question": "What is written on the street sign?",
        "options": "A. MAPLE\nB. HARBOR\nC. ZENITH\nD. COBALT",
        "duration": np.array([161.0], np.float32),
        "frames": tuple({"time": np.array([t], np.float32), "caption": FRAMES[t]} for t in times),
        # first and last frames seen: 4 segments between the 5 frames, no edges
        "segments": tuple(
            {"window": np.array([a, b], np.float32)} for a, b in itertools.pairwise(times)
        ),
        "frames_left": np.array([27], np.int64),
    }


def test_offline_queries_search_beside_the_most_relevant_frame() -> None:
    policy = VideoAgentPolicy(None)
    info = {"legal_actions": ["query", "answer"], "max_queries": 4}
    action = policy.act(observation(), info)
    assert isinstance(action, QueryAction)
    segments = sorted(q.segment for q in action.queries)
    assert segments == [2, 3]  # [40, 80] and [80, 120]: both bounded by the street frame
    assert all(isinstance(q, SegmentQuery) and q.text for q in action.queries)


def test_the_env_cap_and_the_frames_left_bound_a_round() -> None:
    policy = VideoAgentPolicy(None, offline_queries=4)
    info = {"legal_actions": ["query", "answer"], "max_queries": 4}
    obs = observation()
    obs["frames_left"] = np.array([1], np.int64)
    action = policy.act(obs, info)
    assert isinstance(action, QueryAction) and len(action.queries) == 1
