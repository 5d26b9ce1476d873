"""What travels between an environment server and its clients.

**Actions** are typed per environment (OpenEnv ``Action`` models, validated on arrival):
a ``kind`` and its fields, or ``kind="text"`` with an LLM's raw reply, parsed on the
server by the env's own text action set. ``kind="abandon"`` ends the episode without an
answer (a trainer's turn cap) and returns its record. An action of another environment
(``speed`` sent to Zoom) or an unknown field fails validation: HTTP 422, or a WebSocket
``VALIDATION_ERROR``; a well-typed action the rules refuse (a reversed window, a chunk
outside the window) is the env's invalid action (penalty, ``last_action_error``).

**Observations** carry the Gymnasium observation without its pixels (arrays as typed
lists, :func:`encode_value`), the valid frames as images (JPEG quality 90 by default, about
1 ms a 448-pixel frame; PNG on request: lossless, so the client rebuilds exactly the
in-process arrays, at about 10 ms a frame), ``info``,
``terminated`` and ``truncated``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from openenv.core.env_server.types import Action, Observation, ResetRequest, State
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from video_env.actions.types import (
    AnswerAction,
    EvaluateAction,
    InvalidAction,
    QueryAction,
    RewatchAction,
    SegmentQuery,
    SpeedAction,
)
from video_env.actions.validation import MAX_WIRE_TEXT_CHARS
from video_env.errors import ConfigError, VideoEnvError
from video_env.serving.images import ImageFormat, decode_frames, encode_frames
from video_env.types import Interval

__all__ = [
    "ClipQueryWireAction",
    "ImageFormat",
    "PacingWireAction",
    "ResetArguments",
    "SegmentQueryModel",
    "TextWireAction",
    "VideoObservation",
    "VideoState",
    "WireAction",
    "ZoomWireAction",
    "action_model",
    "decode_frames",
    "decode_value",
    "encode_frames",
    "encode_value",
    "reset_arguments",
    "to_env_action",
]

Window = tuple[float, float]
_TEXT_LIMIT = MAX_WIRE_TEXT_CHARS  # characters of a text field (replies, notes, answers)


class WireAction(Action):
    """Fields shared by the three environments' actions."""

    answer: str | None = Field(default=None, max_length=_TEXT_LIMIT)
    window: Window | None = None
    text: str | None = Field(default=None, max_length=_TEXT_LIMIT)
    strict: bool = False
    reason: str = Field(default="abandoned", max_length=256)


class PacingWireAction(WireAction):
    """A Pacing action: ``speed`` (factor), ``rewatch`` (chunk), ``answer``, ``text``."""

    kind: Literal["speed", "rewatch", "answer", "text", "abandon"]
    factor: int | None = None
    chunk: int | None = None
    memory: str | None = Field(default=None, max_length=_TEXT_LIMIT)


class ZoomWireAction(WireAction):
    """A Zoom action: ``evaluate`` (windows), ``answer``, ``text``."""

    kind: Literal["evaluate", "answer", "text", "abandon"]
    windows: list[Window] | None = Field(default=None, max_length=4096)


class SegmentQueryModel(BaseModel):
    """One ClipQuery segment query."""

    model_config = ConfigDict(extra="forbid")

    segment: int
    text: str = Field(max_length=_TEXT_LIMIT)


class ClipQueryWireAction(WireAction):
    """A ClipQuery action: ``query`` (segment queries), ``answer``, ``text``."""

    kind: Literal["query", "answer", "text", "abandon"]
    queries: list[SegmentQueryModel] | None = Field(default=None, max_length=4096)


class TextWireAction(WireAction):
    """An action of an env with no structured wire form: ``text`` (a reply) or ``abandon``.

    The server parses the text with the env's own ``text_action_set()``.
    """

    kind: Literal["text", "abandon"]


_ACTION_MODELS: dict[str, type[WireAction]] = {
    "PacingEnv": PacingWireAction,
    "ZoomEnv": ZoomWireAction,
    "ClipQueryEnv": ClipQueryWireAction,
}


def action_model(env_class: str) -> type[WireAction]:
    """The action model of an environment class (``"PacingEnv"``...).

    A registered env class with no structured model of its own takes text actions
    (:class:`TextWireAction`).

    Raises:
        ConfigError: For a class that is no registered environment's.
    """
    if env_class in _ACTION_MODELS:
        return _ACTION_MODELS[env_class]
    if env_class in _registered_classes():
        return TextWireAction
    raise ConfigError(f"no wire action model for {env_class}; known: {_registered_classes()}")


def _registered_classes() -> list[str]:
    """The class names of the registered environments (their entry points')."""
    from video_env.envs.registration import ENTRY_POINTS

    return sorted(entry.rsplit(":", 1)[1] for entry in ENTRY_POINTS.values())


def to_env_action(action: WireAction) -> Any:
    """The env's action dataclass for a wire action (``text`` and ``abandon`` excepted).

    Values the env's rules would refuse anyway but that cannot even be built (a reversed
    window) become an :class:`~video_env.actions.InvalidAction` with the reason.
    """
    kind = getattr(action, "kind", None)
    try:
        if kind == "answer":
            if action.answer is None:
                return InvalidAction("answer needs 'answer'")
            window = None if action.window is None else Interval(*action.window)
            return AnswerAction(action.answer, window, getattr(action, "memory", None))
        if isinstance(action, PacingWireAction):
            if kind == "speed":
                if action.factor is None:
                    return InvalidAction("speed needs 'factor'")
                return SpeedAction(action.factor, action.memory)
            if action.chunk is None:
                return InvalidAction("rewatch needs 'chunk'")
            return RewatchAction(action.chunk, action.memory)
        if isinstance(action, ZoomWireAction):
            if not action.windows:
                return InvalidAction("evaluate needs 'windows'")
            return EvaluateAction(tuple(Interval(*w) for w in action.windows))
        if isinstance(action, ClipQueryWireAction):
            if not action.queries:
                return InvalidAction("query needs 'queries'")
            return QueryAction(tuple(SegmentQuery(q.segment, q.text) for q in action.queries))
    except (VideoEnvError, ValueError) as exc:
        return InvalidAction(f"malformed action: {exc}")
    raise ConfigError(f"no env action for kind {kind!r}")


class ResetArguments(ResetRequest):
    """What a reset takes, over HTTP and WebSocket alike.

    OpenEnv's bounds of an HTTP ``/reset`` body (``seed >= 0``, an ``episode_id`` of at
    most 255 characters), and the sample to play: ``index`` or ``sample_id``. OpenEnv
    checks an HTTP body against its own model but hands a WebSocket reset's ``data`` to
    the environment as it came; every reset calls :func:`reset_arguments`. An unknown key
    (``indx``, Gym's ``options``) is refused, and ``index`` must be an integer: a reset
    never plays another sample than the one asked for.
    """

    model_config = ConfigDict(extra="forbid")

    index: StrictInt | None = None
    sample_id: str | None = Field(default=None, max_length=_TEXT_LIMIT)


#: Characters of a refused value quoted back in a validation error.
_QUOTED = 80


def reset_arguments(**kwargs: Any) -> ResetArguments:
    """A reset's arguments, checked (:class:`ResetArguments`).

    Raises:
        pydantic.ValidationError: Naming each bad field (HTTP 422, a WebSocket
            ``VALIDATION_ERROR``); a refused value is quoted at most 80 characters long.
    """
    try:
        checked: ResetArguments = ResetArguments.model_validate(kwargs)
    except ValidationError as exc:
        details: list[Any] = [
            {
                "type": e["type"],
                "loc": e["loc"],
                "input": _quoted(e.get("input")),
                **({"ctx": e["ctx"]} if "ctx" in e else {}),
            }
            for e in exc.errors(include_url=False)
        ]
        raise ValidationError.from_exception_data(exc.title, details) from None
    return checked


def _quoted(value: Any) -> Any:
    """``value``, or a short text standing for it when it is long."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= _QUOTED:
        return value
    return f"{text[: _QUOTED - 30]}... ({len(text)} characters)"


class VideoObservation(Observation):
    """One observation of a video-env environment on the wire.

    Attributes:
        observation: The Gymnasium observation without ``frames`` (:func:`encode_value`).
        frames: The valid frames as base64 ``data:`` URLs, in order (Pacing with pixel
            observations; empty otherwise).
        frames_shape: The shape of the observation's padded ``frames`` array, if any.
        info: The env's ``info`` (JSON values; ``info["episode"]`` at the end).
        terminated: Gymnasium's ``terminated``.
        truncated: Gymnasium's ``truncated``.
    """

    observation: dict[str, Any] = Field(default_factory=dict)
    frames: list[str] = Field(default_factory=list)
    frames_shape: list[int] | None = None
    info: dict[str, Any] = Field(default_factory=dict)
    terminated: bool = False
    truncated: bool = False


class VideoState(State):
    """A session's state: the env, the sample, the turn and whether the session expired."""

    env_id: str = ""
    sample_id: str | None = None
    turn: int = 0
    done: bool = True
    expired: bool = False


def encode_value(value: Any) -> Any:
    """A Gymnasium observation value as JSON: arrays keep dtype and shape, tuples stay."""
    if isinstance(value, np.ndarray):
        return {"__ndarray__": value.tolist(), "dtype": value.dtype.str, "shape": value.shape}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {str(k): encode_value(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return {"__tuple__": [encode_value(v) for v in value]}
    if isinstance(value, list):
        return [encode_value(v) for v in value]
    return value


def decode_value(value: Any) -> Any:
    """The inverse of :func:`encode_value`."""
    if isinstance(value, Mapping):
        if "__ndarray__" in value:
            array = np.asarray(value["__ndarray__"], dtype=np.dtype(value["dtype"]))
            return array.reshape(tuple(value["shape"]))
        if "__tuple__" in value:
            return tuple(decode_value(v) for v in value["__tuple__"])
        return {k: decode_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    return value


def json_safe(value: Any) -> Any:
    """``info`` as plain JSON values (arrays as lists, tuples as lists)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, Interval):
        return [value.start, value.end]
    return value
