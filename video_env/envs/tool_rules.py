"""The parts a Tools preset is made of: frame rules, tool specs, and the preset itself.

A :class:`ToolPreset` is one system's loop as data: which tools it has (each a
:class:`ToolSpec`: the system's name and arguments for one of the env's generic tools),
how many frames each returns and at what size (:class:`FrameRule`), how it writes times,
its turn budget, its history and what an invalid call does. The presets themselves are
in :mod:`video_env.envs.tool_presets`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from video_env.errors import ConfigError

#: The env's generic tools; each preset names a subset of them its own way.
GENERIC_TOOLS = ("view", "search", "read", "ask", "overview", "locate", "answer")
#: The generic fields a tool's arguments map onto (see :class:`ToolSpec`).
FIELDS = ("start", "end", "spans", "query", "n", "fps", "k", "clip", "clips", "time", "text")
#: How replies write tool calls (:mod:`video_env.actions.tools`).
REPLY_FORMATS = ("hermes", "json", "video_zoom", "retrieve", "action", "calls")
#: How results write times, and what a position argument counts.
TIME_FORMATS = ("seconds", "mm:ss", "hh:mm:ss")
POSITIONS = ("seconds", "frame", "pool")
#: Shortest clip of a caption index (an hour's video is then 3,600 captions at reset).
MIN_INDEX_CLIP_S = 1.0
#: Events with an error message, and video-env's wording of each (fields: ``name``,
#: ``argument``, ``start``, ``end``, ``duration``, ``count``, ``most``, ``tools``).
MESSAGE_KEYS: dict[str, str] = {
    "unknown_tool": "unknown tool {name!r}; the tools are: {tools}",
    "missing_argument": "{argument} parameter is required",
    "unknown_argument": "{name} has no argument {argument!r}",
    "bad_argument": "{name}: {argument} is not valid: {detail}",
    "negative_start": "start_time must be non-negative, got {start}",
    "reversed": "end_time ({end}) must be greater than start_time ({start})",
    "start_past_video": "start_time ({start}s) exceeds video duration ({duration:.2f}s)",
    "end_past_video": "end_time ({end}s) exceeds video duration ({duration:.2f}s)",
    "too_many_frames": "Number of frames extracted ({count}) exceeds the maximum allowed ({most}).",
    "last_turn": "this is the last turn: only the answer is allowed",
    "bad_clip": "no clip {argument}; clips are numbered 1 to {most}",
}


@dataclass(frozen=True)
class FrameRule:
    """How many frames a tool takes from a span, and at what size.

    The count is the call's ``n`` if the tool takes one; else ``int(fps * length)`` with the
    call's or the rule's ``fps``; else the rule's ``n``. A count above ``max_frames`` is an
    invalid call when ``over_max == "error"`` (VideoZoomer), else it is clamped; a count
    below ``min_frames`` is raised to it (and with ``even``, rounded down to an even number,
    as qwen-vl-utils' ``smart_nframes``). Each frame's size follows ``resize``:
    ``"qwen"`` (Qwen-VL's ``smart_resize``: sides multiples of 28, area within
    ``[min_pixels, max_pixels]``), ``"scale"`` (scaled down to ``max_pixels`` when larger,
    VideoZoomer's), ``"box"`` (scaled down to fit ``box``, FrameThinker's) or
    ``"short_side"`` (the shorter side made ``short_side``, VideoSeek's).

    Attributes:
        n: Frames when neither the call nor ``fps`` sets a count.
        fps: Frames per second of the span.
        min_frames: Fewest frames returned.
        max_frames: Most frames returned.
        over_max: ``"clamp"`` or ``"error"`` above ``max_frames``.
        max_pixels: Pixel budget of one frame (``qwen``, ``scale``).
        min_pixels: Smallest pixel count of one frame (``qwen``, ``scale``).
        resize: How a frame is sized (above).
        box: ``(width, height)`` a ``box`` frame fits in.
        short_side: The shorter side of a ``short_side`` frame.
        even: Round the count down to an even number (at least 2).
        native_fps: Count the span's native frames (VideoSeek's ``focus``: at most
            ``max_frames`` of them), instead of ``n`` or ``fps``.
        sampling: ``"centres"`` (bin centres, never the span's ends) or ``"linspace"``
            (both ends included, as ``np.linspace``).
        as_video: Frames reach the model as one video (Qwen merges frame pairs: half the
            visual tokens) rather than as images.
    """

    n: int | None = None
    fps: float | None = None
    min_frames: int = 1
    max_frames: int = 128
    over_max: Literal["clamp", "error"] = "clamp"
    max_pixels: int = 224 * 224
    min_pixels: int = 3136
    resize: Literal["qwen", "scale", "box", "short_side"] = "qwen"
    box: tuple[int, int] | None = None
    short_side: int | None = None
    even: bool = False
    native_fps: bool = False
    sampling: Literal["centres", "linspace"] = "centres"
    as_video: bool = False

    def __post_init__(self) -> None:
        if self.n is None and self.fps is None:
            raise ConfigError("a frame rule needs n or fps")
        if self.fps is not None and not (math.isfinite(self.fps) and self.fps > 0):
            raise ConfigError(f"fps must be finite and > 0, got {self.fps}")
        if not 1 <= self.min_frames <= self.max_frames:
            raise ConfigError("frame rule needs 1 <= min_frames <= max_frames")
        if not 0 < self.min_pixels <= self.max_pixels:
            raise ConfigError("frame rule needs 0 < min_pixels <= max_pixels")
        if (self.resize == "box") != (self.box is not None):
            raise ConfigError("a box is given exactly when resize is 'box'")
        if (self.resize == "short_side") != (self.short_side is not None):
            raise ConfigError("short_side is given exactly when resize is 'short_side'")

    @property
    def bound(self) -> tuple[int, int]:
        """The largest ``(width, height)`` a frame of aspect 9:16 to 16:9 can get."""
        if self.box is not None:
            side = max(self.box)
        elif self.short_side is not None:
            side = math.ceil(self.short_side * 16 / 9)
        else:
            side = math.ceil(math.sqrt(self.max_pixels * 16 / 9) / 28) * 28
        return side, side


@dataclass(frozen=True)
class ToolSpec:
    """One tool of a preset: the system's name and arguments for a generic tool.

    Attributes:
        name: The tool's name in the system's replies (``"crop_video"``).
        tool: The generic tool it runs (:data:`GENERIC_TOOLS`).
        params: The system's argument names, in their positional order, each mapped onto a
            generic field (:data:`FIELDS`): ``{"start_time": "start", "end_time": "end"}``.
        required: The arguments a call must give (default: all of ``params``).
        description: What the tool does, for the prompt.
        frames: The frames the tool looks at or returns (view, search, ask, overview, read).
        frames_over: ``(seconds, rule)``: the rule for videos longer than ``seconds``
            (FrameThinker's 12 smaller frames past 300 s).
        k: Results of a search when the call gives none.
        max_k: Most results a search returns.
        select: ``"top"`` (the ``k`` best) or ``"dpp"`` (a query-conditioned DPP over the
            frames' embeddings, TimeSearch-R's).
        returns: What a search returns: ``"frames"``, ``"captions"`` (of the index's
            clips) or ``"frame_captions"`` (each found frame captioned, VideoAgent's).
        fixed: Arguments the system passes that the env ignores (``video_path``).
    """

    name: str
    tool: str
    params: Mapping[str, str] = field(default_factory=dict)
    required: tuple[str, ...] | None = None
    description: str = ""
    frames: FrameRule | None = None
    frames_over: tuple[float, FrameRule] | None = None
    k: int = 1
    max_k: int = 32
    select: Literal["top", "dpp"] = "top"
    returns: Literal["frames", "captions", "frame_captions"] = "frames"
    fixed: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.tool not in GENERIC_TOOLS:
            raise ConfigError(f"unknown tool {self.tool!r}; known: {GENERIC_TOOLS}")
        unknown = set(self.params.values()) - set(FIELDS)
        if unknown:
            raise ConfigError(f"{self.name}: unknown fields {sorted(unknown)}; known: {FIELDS}")
        object.__setattr__(self, "params", dict(self.params))
        if self.required is None:
            object.__setattr__(self, "required", tuple(self.params))
        if self.tool in ("view", "ask", "overview") and self.frames is None:
            raise ConfigError(f"{self.name}: a {self.tool} tool needs a frame rule")
        if not 1 <= self.k <= self.max_k:
            raise ConfigError(f"{self.name}: needs 1 <= k <= max_k")
        if self.select not in ("top", "dpp"):
            raise ConfigError(f"{self.name}: select must be top or dpp, got {self.select!r}")

    def frame_rule(self, duration: float) -> FrameRule | None:
        """The frame rule for a video of ``duration`` seconds."""
        if self.frames_over is not None and duration > self.frames_over[0]:
            return self.frames_over[1]
        return self.frames

    @property
    def text_argument(self) -> str | None:
        """The argument that carries text (an answer's, a query's), if any."""
        return next((a for a, f in self.params.items() if f in ("text", "query")), None)

    def field_of(self, argument: str) -> str | None:
        """The generic field an argument of this tool fills (``None``: not an argument)."""
        return self.params.get(argument)


@dataclass(frozen=True)
class ToolPreset:
    """One system's tool loop as data (see :mod:`video_env.envs.tool_presets`).

    Attributes:
        name: The preset's name (``"longvt"``).
        system: The system and its released code (``"LongVT (EvolvingLMMs-Lab/LongVT)"``).
        tools: Its tools, answer included.
        reply_format: How its replies write a call (:data:`REPLY_FORMATS`).
        time_format: How results and prompts write times (:data:`TIME_FORMATS`).
        position: What a time argument counts: ``"seconds"`` (``mm:ss`` accepted as well),
            ``"frame"`` (the video's frame index) or ``"pool"`` (0-based index into the
            ``pool`` frames sampled at reset, Video-MTR's).
        max_turns: Turns of an episode; after the last without an answer it is truncated.
        last_turn_tools: Whether the last turn may call a tool (else only answer).
        history: ``"accumulate"`` (every result stays in the observation) or
            ``"replace"`` (the last result replaces the others, Video-MTR's).
        on_invalid: ``"error"`` (a message, the episode goes on), ``"clamp"`` (arguments
            moved into range, as TimeSearch-R) or ``"end"`` (the episode ends).
        preview: Frames of the whole video shown at reset, if any.
        preview_over: ``(seconds, rule)``: the preview of videos longer than ``seconds``.
        preview_captions: Caption each preview frame (VideoAgent's start) instead of
            showing it.
        pool: Frames of the pool ``"pool"`` positions index (uniform over the video).
        index_clip_s: Length of the clips of a caption index built at reset (DVD's,
            LongVidSearch's; FALCONEye's 60 s clips); ``None`` for none.
        index_shown: Show the index's captions at reset (FALCONEye's start).
        messages: The system's own error messages, by event (:data:`MESSAGE_KEYS`), as
            ``str.format`` templates; an event it lacks gets video-env's wording.
        unparsed_ends: A reply with no readable call ends the episode (TimeSearch-R's env;
            VideoZoomer takes a reply without ``<video_zoom>`` as its final answer), rather
            than being an invalid action the episode survives.
        grid_fps: Frame rate of the candidate frames a search ranks.
        max_candidates: Most candidate frames a search ranks (uniform over its span).
    """

    name: str
    system: str
    tools: tuple[ToolSpec, ...]
    reply_format: str = "hermes"
    time_format: str = "seconds"
    position: str = "seconds"
    max_turns: int = 5
    last_turn_tools: bool = True
    history: Literal["accumulate", "replace"] = "accumulate"
    on_invalid: Literal["error", "clamp", "end"] = "error"
    preview: FrameRule | None = None
    preview_over: tuple[float, FrameRule] | None = None
    preview_captions: bool = False
    pool: int | None = None
    index_clip_s: float | None = None
    index_shown: bool = False
    messages: Mapping[str, str] = field(default_factory=dict)
    unparsed_ends: bool = False
    grid_fps: float = 1.0
    max_candidates: int = 512

    def __post_init__(self) -> None:
        kinds = {
            "name must be text": isinstance(self.name, str) and bool(self.name),
            "tools must be a tuple of ToolSpec": isinstance(self.tools, tuple)
            and all(isinstance(s, ToolSpec) for s in self.tools),
            "preview_over must be (seconds, FrameRule)": self.preview_over is None
            or (isinstance(self.preview_over, tuple) and len(self.preview_over) == 2
                and _is_number(self.preview_over[0], 0.0)
                and isinstance(self.preview_over[1], FrameRule)),
            "messages must map event names to str templates": isinstance(self.messages, Mapping)
            and all(isinstance(v, str) for v in self.messages.values()),
            **{
                f"{name} must be True or False": isinstance(getattr(self, name), bool)
                for name in ("last_turn_tools", "preview_captions", "index_shown", "unparsed_ends")
            },
        }  # fmt: skip
        failed = [rule for rule, ok in kinds.items() if not ok]
        if failed:
            raise ConfigError(f"preset {self.name!r}: " + "; ".join(failed))
        checks = {
            f"reply_format must be one of {REPLY_FORMATS}": self.reply_format in REPLY_FORMATS,
            f"time_format must be one of {TIME_FORMATS}": self.time_format in TIME_FORMATS,
            f"position must be one of {POSITIONS}": self.position in POSITIONS,
            "max_turns must be an integer >= 1": _is_count(self.max_turns, 1),
            "history must be accumulate or replace": self.history in ("accumulate", "replace"),
            "on_invalid must be error, clamp or end": self.on_invalid in ("error", "clamp", "end"),
            "a pool position needs pool frames": self.position != "pool" or bool(self.pool),
            "pool must be an integer >= 2": self.pool is None or _is_count(self.pool, 2),
            f"index_clip_s must be a number >= {MIN_INDEX_CLIP_S}": self.index_clip_s is None
            or _is_number(self.index_clip_s, MIN_INDEX_CLIP_S),
            "grid_fps must be a finite number > 0": _is_number(self.grid_fps, 0.0)
            and self.grid_fps > 0,
            "max_candidates must be an integer >= 1": _is_count(self.max_candidates, 1),
            "preview must be a FrameRule or None": self.preview is None
            or isinstance(self.preview, FrameRule),
            "exactly one answer tool": sum(s.tool == "answer" for s in self.tools) == 1,
            "tool names must differ": len({s.name for s in self.tools}) == len(self.tools),
        }
        checks["unknown message events"] = set(self.messages) <= set(MESSAGE_KEYS)
        failed = [rule for rule, ok in checks.items() if not ok]
        if failed:
            raise ConfigError(f"preset {self.name!r}: " + "; ".join(failed))
        object.__setattr__(self, "messages", {**MESSAGE_KEYS, **self.messages})
        needs_index = any(s.tool == "read" or s.returns == "captions" for s in self.tools)
        if (needs_index or self.index_shown) and self.index_clip_s is None:
            raise ConfigError(f"preset {self.name!r}: its tools read an index; set index_clip_s")

    def spec(self, name: str) -> ToolSpec | None:
        """The tool called ``name`` (case-insensitive), if the preset has one."""
        lowered = name.lower()
        return next((s for s in self.tools if s.name.lower() == lowered), None)

    @property
    def roles(self) -> tuple[str, ...]:
        """The perception backends its tools use (``vlm``, ``captioner``, ``clip``)."""
        tools = {s.tool for s in self.tools}
        returns = {s.returns for s in self.tools if s.tool == "search"}
        roles = set()
        if tools & {"ask", "overview"}:
            roles.add("vlm")
        captions = self.index_clip_s or self.preview_captions or "frame_captions" in returns
        if tools & {"read", "overview"} or captions:
            roles.add("captioner")
        if "search" in tools:
            roles.add("clip")
        return tuple(sorted(roles))

    @property
    def answer_tool(self) -> ToolSpec:
        """The tool that answers."""
        return next(s for s in self.tools if s.tool == "answer")

    @property
    def max_result_frames(self) -> int:
        """Most frames one result can carry to the policy (the observation's bound)."""
        counts = [
            s.max_k if s.tool == "search" else rule.max_frames
            for s in self.tools
            for rule in (s.frames, s.frames_over[1] if s.frames_over else None)
            if rule is not None
            and (s.tool == "view" or (s.tool == "search" and s.returns == "frames"))
        ]
        if not self.preview_captions:
            counts += [rule.max_frames for rule in self._previews()]
        return max(counts, default=0)

    def _previews(self) -> list[FrameRule]:
        rules = [self.preview, self.preview_over[1] if self.preview_over else None]
        return [rule for rule in rules if rule is not None]

    def preview_rule(self, duration: float) -> FrameRule | None:
        """The preview of a video of ``duration`` seconds (``None``: none)."""
        if self.preview_over is not None and duration > self.preview_over[0]:
            return self.preview_over[1]
        return self.preview

    @property
    def frame_bound(self) -> tuple[int, int]:
        """The ``(width, height)`` every frame the policy is shown fits in."""
        rules = [
            rule
            for s in self.tools
            if s.tool == "view" or (s.tool == "search" and s.returns == "frames")
            for rule in (s.frames, s.frames_over[1] if s.frames_over else None)
        ]
        if not self.preview_captions:
            rules += self._previews()
        bounds = [r.bound for r in rules if r is not None]
        return (max(w for w, _ in bounds), max(h for _, h in bounds)) if bounds else (1, 1)

    def message(self, event: str, **fields: Any) -> str:
        """The error message of ``event``, in the system's words where it has them."""
        try:
            return self.messages[event].format(**fields)
        except (KeyError, IndexError, ValueError, AttributeError, TypeError):  # a field not given
            return MESSAGE_KEYS[event].format_map(_Missing(fields))

    def with_overrides(self, **overrides: Any) -> ToolPreset:
        """This preset with fields replaced one by one (``max_turns=8``).

        Raises:
            ConfigError: For a name that is no field of a preset.
        """
        known = sorted(self.__dataclass_fields__)
        unknown = set(overrides) - set(known)
        if unknown:
            raise ConfigError(f"unknown preset fields {sorted(unknown)}; known: {known}")
        return replace(self, **overrides) if overrides else self


def _is_count(value: Any, least: int) -> bool:
    """An ``int`` (not a bool) of at least ``least``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _is_number(value: Any, least: float) -> bool:
    """A finite real number (not a bool) of at least ``least``."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= least
    )


class _Missing(dict):  # type: ignore[type-arg]
    """Format fields, a missing one shown as ``?``."""

    def __missing__(self, key: str) -> str:
        return "?"
