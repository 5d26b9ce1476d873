"""VideoScout's pacing rules (the paper's numbers): chunking, per-speed sampling, reward."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from video_env.errors import ConfigError
from video_env.types import Interval
from video_env.video.base import Size


@dataclass(frozen=True)
class SpeedSpec:
    """What one turn at a speed shows: frames, their resolution, chunks covered.

    Attributes:
        frames: Frames shown.
        resolution: Frame width in pixels; also the height unless ``height`` is set
            (the paper's square frames).
        chunks: Chunks the turn covers.
        height: Frame height for non-square frames (e.g. 16:9 for a model trained on
            them), ``None`` for square ones.
    """

    frames: int
    resolution: int
    chunks: int
    height: int | None = None

    @property
    def size(self) -> Size:
        """The shown frames' size (width, height)."""
        return Size(self.resolution, self.height or self.resolution)


def _default_speeds() -> dict[int, SpeedSpec]:
    return {1: SpeedSpec(20, 448, 1), 2: SpeedSpec(16, 448, 2), 4: SpeedSpec(12, 316, 4)}


@dataclass(frozen=True)
class PacingRules:
    """Settings of the Pacing env taken from VideoScout; every number overridable.

    Attributes:
        chunk_table: ``(shorter_than_s, chunk_s)`` rows: a video shorter than the first
            bound gets the first chunk duration, and so on (the last bound is infinite).
        speeds: Per speed factor, the frames, resolution and chunks of a forward turn.
        rewatch: What a rewatch turn shows (one chunk).
        memory_words: Word budget of the agent's memory.
        format_reward: ``r_fmt`` when no turn was malformed.
        timing_reward: Weight of ``r_timing``.
    """

    chunk_table: tuple[tuple[float, float], ...] = (
        (30.0, 10.0),
        (120.0, 15.0),
        (300.0, 20.0),
        (900.0, 30.0),
        (math.inf, 45.0),
    )
    speeds: dict[int, SpeedSpec] = field(default_factory=_default_speeds)
    rewatch: SpeedSpec = field(default_factory=lambda: SpeedSpec(20, 448, 1))
    memory_words: int = 200
    format_reward: float = 0.3
    timing_reward: float = 0.5

    def __post_init__(self) -> None:
        if not self.chunk_table or self.chunk_table[-1][0] != math.inf:
            raise ConfigError("the chunk table must end with an infinite bound")
        if sorted(self.speeds) != [1, 2, 4]:
            raise ConfigError("speeds must define 1x, 2x and 4x")
        if self.memory_words < 1:
            raise ConfigError("memory_words must be >= 1")

    @property
    def max_frames(self) -> int:
        """Most frames one turn shows."""
        return max([s.frames for s in self.speeds.values()] + [self.rewatch.frames])

    @property
    def max_resolution(self) -> int:
        """Largest per-turn frame width."""
        return max(s.size.width for s in self._specs())

    @property
    def max_height(self) -> int:
        """Largest per-turn frame height."""
        return max(s.size.height for s in self._specs())

    def _specs(self) -> list[SpeedSpec]:
        return [*self.speeds.values(), self.rewatch]

    def chunk_seconds(self, duration: float) -> float:
        """Chunk duration for a video of ``duration`` seconds."""
        return next(chunk for bound, chunk in self.chunk_table if duration < bound)

    def chunks(self, duration: float) -> list[Interval]:
        """The chunks of a video (the last one may be shorter)."""
        step = self.chunk_seconds(duration)
        count = max(1, math.ceil(duration / step - 1e-9))
        return [Interval(i * step, min(duration, (i + 1) * step)) for i in range(count)]

    def to_dict(self) -> dict[str, Any]:
        """The rules as plain JSON values (the chunk table's open bound as ``None``).

        :meth:`from_dict` reads it back; a checkpoint trained under these rules keeps them
        this way (``videoscout.json``), so a benchmark loads it with the same frames.
        """
        data = asdict(self)
        data["chunk_table"] = [
            [None if math.isinf(bound) else bound, chunk] for bound, chunk in self.chunk_table
        ]
        data["speeds"] = {str(factor): spec for factor, spec in data["speeds"].items()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PacingRules:
        """Rules from :meth:`to_dict`'s output; missing keys keep their defaults.

        Raises:
            ConfigError: For keys the rules do not have or values that do not fit them.
        """
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise ConfigError(f"pacing rules: unknown keys {sorted(unknown)}")
        fields = dict(data)
        try:
            if "chunk_table" in fields:
                fields["chunk_table"] = tuple(
                    (math.inf if bound is None else float(bound), float(chunk))
                    for bound, chunk in fields["chunk_table"]
                )
            if "speeds" in fields:
                fields["speeds"] = {
                    int(factor): _speed_spec(spec) for factor, spec in fields["speeds"].items()
                }
            if "rewatch" in fields:
                fields["rewatch"] = _speed_spec(fields["rewatch"])
            if "memory_words" in fields and not _is_int(fields["memory_words"]):
                raise TypeError("memory_words must be an integer")
            for name in ("format_reward", "timing_reward"):
                if name in fields and not isinstance(fields[name], int | float):
                    raise TypeError(f"{name} must be a number")
            return cls(**fields)
        except (AttributeError, TypeError, ValueError) as err:
            raise ConfigError(f"pacing rules: malformed value ({err})") from err

    def timing(self, advanced: int, reference: int, correct: bool) -> float:
        """``r_timing = w * min(M, T) / max(M, T) * 1[correct]``."""
        if not correct or advanced <= 0 or reference <= 0:
            return 0.0
        return self.timing_reward * min(advanced, reference) / max(advanced, reference)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _speed_spec(data: dict[str, Any]) -> SpeedSpec:
    """A :class:`SpeedSpec` from its JSON object, its counts and sizes checked as integers."""
    spec = SpeedSpec(**data)
    if not all(_is_int(v) for v in (spec.frames, spec.resolution, spec.chunks)) or not (
        spec.height is None or _is_int(spec.height)
    ):
        raise TypeError(f"frames, resolution, chunks and height must be integers: {data}")
    return spec


def reference_chunk(chunks: list[Interval], evidence_end: float) -> int:
    """1-based number of the chunk containing ``evidence_end``."""
    for number, chunk in enumerate(chunks, start=1):
        if evidence_end <= chunk.end:
            return number
    return len(chunks)


def pixel_vlm_rules() -> PacingRules:
    """The pacing preset ``pixel-vlm``: the paper's frame counts at the pixel VLM's size.

    Its own 16:9 fed size, 504x280 (4x at the paper's 316/448 of that side, 364x196): that
    model never saw a square frame.
    """
    return PacingRules(
        speeds={
            1: SpeedSpec(20, 504, 1, 280),
            2: SpeedSpec(16, 504, 2, 280),
            4: SpeedSpec(12, 364, 4, 196),
        },
        rewatch=SpeedSpec(20, 504, 1, 280),
    )


def rules_name(rules: PacingRules) -> str:
    """A short name of ``rules`` for episode records and result tables.

    ``paper`` and ``pixel-vlm`` for those presets; any other rules ``custom-`` and the
    first 8 hex digits of a hash of :meth:`PacingRules.to_dict` with every number as a
    float, so equal rules get one name (``1 == 1.0``; a record read back by
    :meth:`PacingRules.from_dict` keeps its name).
    """
    if rules == PacingRules():
        return "paper"
    if rules == pixel_vlm_rules():
        return "pixel-vlm"
    text = json.dumps(_floats(rules.to_dict()), sort_keys=True)
    return "custom-" + hashlib.blake2b(text.encode(), digest_size=4).hexdigest()


def _floats(value: Any) -> Any:
    """``value`` with every int or float inside it a float (bools and ``None`` kept)."""
    if isinstance(value, dict):
        return {str(k): _floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_floats(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value
