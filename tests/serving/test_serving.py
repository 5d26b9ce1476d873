"""The environments behind OpenEnv's server: remote sessions equal in-process episodes."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("openenv")

import video_env  # noqa: F401
from video_env.actions.types import (
    AnswerAction,
    EvaluateAction,
    QueryAction,
    RewatchAction,
    SegmentQuery,
    SpeedAction,
)
from video_env.errors import ConfigError
from video_env.serving.client import RemoteVideoEnv
from video_env.serving.testing import LocalServer
from video_env.types import Interval
from video_env.wrappers.text_actions import default_action_set, parse_text_action

PACING = {"dataset": "synth-tiny", "pixel_observations": True}


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types, arrays by dtype, shape and content."""
    if isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in b)
    if isinstance(b, tuple):
        return isinstance(a, tuple) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and a == b


@pytest.fixture(scope="module")
def pacing_server() -> Iterator[LocalServer]:
    with LocalServer("VideoEnv/Pacing-v0", PACING, max_sessions=8, image_format="png") as server:
        yield server


def local_env(env_id: str, kwargs: dict[str, Any]) -> Any:
    return gym.make(env_id, disable_env_checker=True, **kwargs).unwrapped


def replay(remote: RemoteVideoEnv, local: Any, actions: list[Any]) -> list[float]:
    """Both envs through the same actions; every observation, reward and flag equal."""
    o_remote, _ = remote.reset(seed=5, options={"index": 1})
    o_local, _ = local.reset(seed=5, options={"index": 1})
    assert same(o_remote, o_local)
    rewards = []
    for action in actions:
        r = remote.step(action)  # text travels as text, parsed on the server
        text = isinstance(action, str)
        expected = local.step(
            parse_text_action(default_action_set(local), action) if text else action
        )
        assert same(r[0], expected[0])
        assert r[1:4] == pytest.approx(expected[1:4])
        rewards.append(r[1])
    return rewards


def test_pacing_remote_episode_equals_in_process(pacing_server: LocalServer) -> None:
    local = local_env("VideoEnv/Pacing-v0", PACING)
    with RemoteVideoEnv(pacing_server.base_url) as remote:
        rewards = replay(
            remote,
            local,
            [
                SpeedAction(2, "two chunks"),
                RewatchAction(3, "look again"),
                "not an action at all",  # text: parsed on the server, an invalid action
                AnswerAction("A", Interval(0.0, 5.0), "done"),
            ],
        )
        assert rewards[2] == pytest.approx(-0.1)
        assert remote.last is not None and remote.last.done
        record = remote.last.info["episode"]
        assert record["ended_by"] == "answer" and record["turns"] == 4
        assert remote.state().done and remote.state().step_count == 4


def test_pacing_frames_travel_as_png_images(pacing_server: LocalServer) -> None:
    with RemoteVideoEnv(pacing_server.base_url) as remote:
        obs, _ = remote.reset(options={"index": 0})
        assert remote.last is not None
        frames = remote.last.frames
        assert len(frames) == int(obs["n_frames"]) > 0
        assert all(url.startswith("data:image/png;base64,") for url in frames)
        assert remote.last.frames_shape == list(obs["frames"].shape)


def test_jpeg_frames_are_close_to_the_pixels() -> None:
    local = local_env("VideoEnv/Pacing-v0", PACING)
    with (
        LocalServer("VideoEnv/Pacing-v0", PACING, max_sessions=1) as server,
        RemoteVideoEnv(server.base_url) as remote,
    ):
        obs, _ = remote.reset(seed=1, options={"index": 0})
        expected, _ = local.reset(seed=1, options={"index": 0})
        assert remote.last is not None and remote.last.frames[0].startswith("data:image/jpeg")
        n = int(obs["n_frames"])
        error = np.abs(obs["frames"][:n].astype(int) - expected["frames"][:n].astype(int))
        assert 0 < error.mean() < 3  # lossy, but the same pictures
        assert same({k: v for k, v in obs.items() if k != "frames"},
                    {k: v for k, v in expected.items() if k != "frames"})  # fmt: skip


@pytest.mark.parametrize(
    ("env_id", "kwargs", "actions"),
    [
        (
            "VideoEnv/Zoom-v0",
            {"dataset": "synth-tiny"},
            [EvaluateAction((Interval(0.0, 10.0), Interval(10.0, 20.0))), AnswerAction("B")],
        ),
        (
            "VideoEnv/ClipQuery-v0",
            {"dataset": "synth-tiny"},
            [QueryAction((SegmentQuery(1, "a red ball"),)), "answer(A)"],
        ),
    ],
)
def test_zoom_and_clip_query_remote_equal_in_process(
    env_id: str, kwargs: dict[str, Any], actions: list[Any]
) -> None:
    env_class = {"VideoEnv/Zoom-v0": "ZoomEnv", "VideoEnv/ClipQuery-v0": "ClipQueryEnv"}[env_id]
    with (
        LocalServer(env_id, kwargs, max_sessions=2) as server,
        RemoteVideoEnv(server.base_url, env_class) as remote,
    ):
        replay(remote, local_env(env_id, kwargs), actions)
        assert remote.last is not None and remote.last.done


def test_reset_by_sample_id_and_wrong_env_action(pacing_server: LocalServer) -> None:
    local = local_env("VideoEnv/Pacing-v0", PACING)
    wanted = local.samples[1].id
    with RemoteVideoEnv(pacing_server.base_url) as remote:
        remote.reset(options={"sample_id": wanted})
        assert remote.state().sample_id == wanted
        with pytest.raises(ConfigError, match="not a PacingEnv action"):
            remote.step(EvaluateAction((Interval(0.0, 1.0),)))
        with pytest.raises(RuntimeError, match="unknown sample_id"):
            remote.reset(options={"sample_id": "nope"})


def test_concurrent_sessions_are_independent() -> None:
    kwargs = {"dataset": "synth-tiny"}
    errors: list[BaseException] = []
    results: dict[int, str] = {}

    def run(index: int) -> None:
        try:
            with RemoteVideoEnv(server.base_url) as remote:
                remote.reset(seed=index, options={"index": index % 2})
                for _ in range(2):
                    remote.step(SpeedAction(1))
                state = remote.state()
                assert state.turn == 2
                results[index] = str(state.sample_id)
        except BaseException as exc:  # reported below
            errors.append(exc)

    with LocalServer("VideoEnv/Pacing-v0", kwargs, max_sessions=8) as server:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not errors
        assert server.sessions()["created"] == 8
    ids = local_env("VideoEnv/Pacing-v0", kwargs).samples
    assert results == {i: ids[i % 2].id for i in range(8)}


def test_serve_help_lists_the_settings() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "video_env.cli", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    for option in ("--port", "--max-sessions", "--session-timeout", "--max-request-bytes"):
        assert option in out


def test_make_app_refuses_bad_settings() -> None:
    from video_env.serving.server import make_app

    with pytest.raises(ConfigError, match="unknown environment"):
        make_app("VideoEnv/Nope-v0")
    with pytest.raises(ConfigError, match="max_sessions"):
        make_app("VideoEnv/Zoom-v0", max_sessions=0)


@pytest.mark.parametrize("preset", ["longvt", "dvd"])
def test_a_tools_preset_served_plays_its_systems_replies_as_in_process(preset: str) -> None:
    kwargs = {"dataset": "synth-tiny", "preset": preset}
    replies = {
        "longvt": [
            '<tool_call>{"name": "crop_video", "arguments": {"start_time": 5, "end_time": 9}}'
            "</tool_call>",
            "<tool_call>not json</tool_call>",
            "<think>seen enough</think><answer>B</answer>",
        ],
        "dvd": [
            '{"name": "clip_search_tool", "arguments": "{\\"event_description\\": \\"a globe\\"}"}',
            '{"name": "finish", "arguments": {"answer": "A"}}',
        ],
    }[preset]
    with (
        LocalServer("VideoEnv/Tools-v1", kwargs, max_sessions=1) as server,
        RemoteVideoEnv(server.base_url, "ToolsEnv") as remote,
    ):
        replay(remote, local_env("VideoEnv/Tools-v1", kwargs), replies)
        assert remote.last is not None and remote.last.done
