"""Observations as chat messages (OpenAI content parts: text, and frames as images)."""

from __future__ import annotations

from typing import Any

from policies.videoscout.prompt import VideoScoutPrompt, message_parts
from video_env.actions import ClipQueryActionSet, ZoomActionSet
from video_env.backends.base import FrameBatch
from video_env.serving.images import encode_frames

__all__ = ["first_messages", "next_messages", "observation_text"]

_SYSTEM = (
    "You answer a question about a long video you cannot watch directly; you explore it "
    "with actions, one per reply.\n{actions}\nReply with exactly one action, for example: "
    "{example}"
)


def first_messages(
    paradigm: str, observation: dict[str, Any], prompt: VideoScoutPrompt | None = None
) -> list[dict[str, Any]]:
    """The first turn's chat: the system prompt and the first observation."""
    if paradigm == "pacing":
        return pacing_messages(observation, prompt)
    action_set = ZoomActionSet() if paradigm == "zoom" else ClipQueryActionSet()
    system = _SYSTEM.format(actions=action_set.describe(), example=action_set.example())
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": observation_text(paradigm, observation)},
    ]


def next_messages(
    paradigm: str, observation: dict[str, Any], prompt: VideoScoutPrompt | None = None
) -> list[dict[str, Any]]:
    """What follows the model's reply: Pacing's fresh chat, or one more user turn."""
    if paradigm == "pacing":
        return pacing_messages(observation, prompt)
    return [{"role": "user", "content": observation_text(paradigm, observation)}]


def pacing_messages(
    observation: dict[str, Any], prompt: VideoScoutPrompt | None = None
) -> list[dict[str, Any]]:
    """VideoScout's chat for the turn (default: the paper's), frames as JPEG images."""

    def images(batch: FrameBatch) -> list[dict[str, Any]]:
        urls = encode_frames(batch.pixels(), "jpeg")
        return [{"type": "image_url", "image_url": {"url": url}} for url in urls]

    return message_parts((prompt or VideoScoutPrompt()).messages(observation), images)


def observation_text(paradigm: str, observation: dict[str, Any]) -> str:
    """A Zoom or ClipQuery observation as text (what a text-only agent sees)."""
    lines = [f"Question: {observation['question']}"]
    if observation["options"]:
        lines += ["Options:", str(observation["options"])]
    duration = float(observation["duration"][0])
    if paradigm == "zoom":
        lines.append(
            f"Video: {duration:.0f} s. Evaluations left: {int(observation['budget_left'][0])}."
        )
        lines.append("Captions of the clips:")
        lines += [f"{_window(c['window'])}: {c['caption']}" for c in observation["clips"]]
        if observation["evaluations"]:
            lines.append("Evaluations so far:")
            lines += [
                f"{_window(e['window'])}: {e['answer']} "
                f"(confidence {float(e['confidence'][0]):.2f})"
                for e in observation["evaluations"]
            ]
    else:
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
    error = str(observation["last_action_error"])
    if error:
        lines.append(f"Your last reply was invalid: {error}")
    return "\n".join(lines)


def _window(window: Any) -> str:
    return f"[{float(window[0]):.1f}, {float(window[1]):.1f}] s"
