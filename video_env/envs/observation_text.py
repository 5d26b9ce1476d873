"""The envs' observations as text (and frames) for a text or vision-chat agent.

One function per env kind, each what that env's
:meth:`~video_env.envs.text_hooks.TextAgentHooks.observation_text` returns: the question
and options, the kind's own fields, and the last reply's error if there was one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from video_env.video.base import Size

__all__ = [
    "clip_query_text",
    "pacing_images",
    "pacing_text",
    "tools_images",
    "tools_text",
    "zoom_text",
]

_SPEEDS = ("1x", "2x", "4x")


def zoom_text(observation: dict[str, Any]) -> str:
    """A Zoom observation: the clips' captions, the evaluations so far, the budget left."""
    lines = _question(observation)
    duration = float(observation["duration"][0])
    lines.append(
        f"Video: {duration:.0f} s. Evaluations left: {int(observation['budget_left'][0])}."
    )
    lines.append("Captions of the clips:")
    lines += [f"{_window(c['window'])}: {c['caption']}" for c in observation["clips"]]
    if observation["evaluations"]:
        lines.append("Evaluations so far:")
        lines += [
            f"{_window(e['window'])}: {e['answer']} (confidence {float(e['confidence'][0]):.2f})"
            for e in observation["evaluations"]
        ]
    return _with_error(lines, observation)


def clip_query_text(observation: dict[str, Any]) -> str:
    """A ClipQuery observation: the segments, the captions of the frames seen, the budgets."""
    lines = _question(observation)
    duration = float(observation["duration"][0])
    lines.append(
        f"Video: {duration:.0f} s. Query rounds left: {int(observation['rounds_left'][0])}, "
        f"frames left: {int(observation['frames_left'][0])}."
    )
    lines.append(
        "Segments: "
        + "; ".join(
            f"{i}: {_window(s['window'])}" for i, s in enumerate(observation["segments"], 1)
        )
    )
    lines.append("Frames seen:")
    lines += [f"{float(f['time'][0]):.1f} s: {f['caption']}" for f in observation["frames"]]
    return _with_error(lines, observation)


def pacing_text(observation: dict[str, Any]) -> str:
    """A Pacing observation: the window shown, its frames' times, the sensors, the notes.

    The frames themselves are :func:`pacing_images`; a ``-v0`` observation has no duration.
    """
    lines = _question(observation)
    first, last = (int(c) for c in observation["chunks"])
    duration = observation.get("duration")
    video = f"Video: {float(duration[0]):.0f} s, " if duration is not None else "Video: "
    lines.append(
        f"{video}{int(observation['n_chunks'][0])} chunks; "
        f"{float(observation['progress'][0]):.0%} passed."
    )
    how = "rewatched at 1x" if int(observation["rewatching"]) else (
        f"at {_SPEEDS[int(observation['speed'])]}")  # fmt: skip
    lines.append(f"Shown: chunks {first}-{last}, {_window(observation['window'])}, {how}.")
    n = int(observation["n_frames"])
    times = ", ".join(f"{float(t):.1f}" for t in observation["timestamps"][:n])
    lines.append(f"Frames at: {times} s." if n else "No frames shown.")
    sensor = observation.get("sensor")
    if sensor is not None:
        relevance = [f"{float(r):.2f}" for r in sensor["relevance"] if float(r) >= 0]
        lines.append(
            f"VLM: {sensor['answer'] or '(no answer)'} "
            f"(confidence {float(sensor['confidence'][0]):.2f})"
            + (f"; relevance of the chunks: {', '.join(relevance)}." if relevance else ".")
        )
    lines.append(f"Your notes: {observation['memory'] or '(empty)'}")
    return _with_error(lines, observation)


def pacing_images(observation: dict[str, Any], size: Size | None) -> list[np.ndarray]:
    """A Pacing observation's valid frames, cropped to the turn's ``size`` (none without pixels).

    Args:
        observation: A Pacing observation (``frames`` with ``pixel_observations``).
        size: The turn's frame size (``None``: the array's, uncropped).
    """
    frames = observation.get("frames")
    if not isinstance(frames, np.ndarray):
        return []
    n = int(observation["n_frames"])
    w, h = (size.width, size.height) if size is not None else (frames.shape[2], frames.shape[1])
    return list(frames[:n, :h, :w])


def tools_text(observation: dict[str, Any]) -> str:
    """A Tools observation: the video's length, the turns left, each tool result so far."""
    lines = _question(observation)
    lines.append(
        f"Video: {float(observation['duration'][0]):.0f} s. "
        f"Turns left: {int(observation['turns_left'][0])}."
    )
    for result in observation["results"]:
        head = str(result["call"]) or str(result["tool"])
        lines.append(f"[{head}] {result['text']}")
    return _with_error(lines, observation)


def tools_images(observation: dict[str, Any]) -> list[np.ndarray]:
    """The latest result's frames (``pixel_observations``), each cropped to its size."""
    if "frames" not in observation:
        return []
    return [
        np.asarray(frame[:height, :width])
        for frame, (width, height) in zip(
            observation["frames"], observation["frame_sizes"].tolist(), strict=True
        )
        if width and height
    ]


def _question(observation: dict[str, Any]) -> list[str]:
    lines = [f"Question: {observation['question']}"]
    if observation["options"]:
        lines += ["Options:", str(observation["options"])]
    return lines


def _with_error(lines: list[str], observation: dict[str, Any]) -> str:
    error = str(observation["last_action_error"])
    if error:
        lines.append(f"Your last reply was invalid: {error}")
    return "\n".join(lines)


def _window(window: Any) -> str:
    return f"[{float(window[0]):.1f}, {float(window[1]):.1f}] s"
