"""The pacing rules a checkpoint (or a distilled dataset) was made under, kept in its folder.

A model trained in the Pacing env learned its frames: how many a turn and at what size.
``videoscout.json`` in the model's folder records those :class:`PacingRules`
(:meth:`PacingRules.to_dict`), so that whoever runs the model by its folder runs it under
the same rules. The training commands write it, and so does the pixel VLM's training
(``python -m experiments.pixel_models vlm``) for the pixel VLM (its 16:9 frames,
:func:`pixel_vlm_rules`). A model trained on VideoScout
turns also learned its prompt: the record keeps where that prompt placed the note that a
window ends the video (``end_note``, :func:`trained_end_note`) and whether it put the
question before the frames (``question_first``, :func:`trained_question_first`); the two
together are its :class:`PromptLayout` (:func:`trained_layout`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from video_env.envs.pacing_rules import PacingRules, SpeedSpec
from video_env.errors import ConfigError

__all__ = [
    "DEFAULT_LAYOUT",
    "END_NOTE_PLACES",
    "RULES_FILE",
    "PromptLayout",
    "check_end_note",
    "pixel_vlm_rules",
    "rules_name",
    "save_trained_rules",
    "trained_end_note",
    "trained_layout",
    "trained_question_first",
    "trained_rules",
]

#: The file in a data or checkpoint folder naming the pacing rules it was made under.
RULES_FILE = "videoscout.json"

#: Where VideoScout's prompt says that a window ends the video
#: (``policies.videoscout.END_NOTE``): ``window`` ends the window line (before the
#: frames), ``last`` is the user turn's last line (after the question, next to the
#: reply), ``off`` gives the paper's plain prompt.
END_NOTE_PLACES = ("window", "last", "off")


def check_end_note(place: str) -> str:
    """``place`` if it is one of :data:`END_NOTE_PLACES`.

    Raises:
        ConfigError: Otherwise.
    """
    if place not in END_NOTE_PLACES:
        raise ConfigError(f"end_note must be one of {END_NOTE_PLACES}, got {place!r}")
    return place


@dataclass(frozen=True)
class PromptLayout:
    """Where VideoScout's prompt puts its parts: what a model trained on its turns learned.

    The training commands carry one layout from the data to the checkpoint and into every
    rollout (``policies.videoscout.VideoScoutPolicy`` takes its fields).

    Attributes:
        end_note: Where the prompt says that a window ends the video
            (:data:`END_NOTE_PLACES`).
        question_first: Whether the question and its options come before the frames.

    Raises:
        ConfigError: If ``end_note`` is not a place.
    """

    end_note: str = "window"
    question_first: bool = False

    def __post_init__(self) -> None:
        check_end_note(self.end_note)

    def policy_kwargs(self) -> dict[str, Any]:
        """The layout as ``VideoScoutPolicy`` keyword arguments."""
        return {"end_note": self.end_note, "question_first": self.question_first}


#: The default layout: the end note on the window line, the paper's order.
DEFAULT_LAYOUT = PromptLayout()


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


def save_trained_rules(
    folder: str | Path,
    rules: PacingRules,
    *,
    end_note: str | None = None,
    question_first: bool | None = None,
) -> Path:
    """Record in ``folder`` the pacing rules its data or checkpoint was made under.

    Args:
        folder: The data or checkpoint folder.
        rules: Its pacing rules.
        end_note: Where its VideoScout prompt placed the end-of-video note
            (:data:`END_NOTE_PLACES`); ``None``: not recorded.
        question_first: Whether its VideoScout prompt put the question before the
            frames; ``None``: not recorded.
    """
    path = Path(folder) / RULES_FILE
    record: dict[str, Any] = {"rules": rules.to_dict()}
    if end_note is not None:
        record["end_note"] = check_end_note(end_note)
    if question_first is not None:
        record["question_first"] = bool(question_first)
    path.write_text(json.dumps(record, indent=2) + "\n", "utf-8")
    return path


def trained_rules(folder: str | Path) -> PacingRules | None:
    """The pacing rules recorded in ``folder`` (``None`` when it records none).

    A trainer's intermediate ``checkpoint-N`` folder without a record of its own takes its
    run's (the parent folder's).

    Raises:
        ConfigError: When the record is not valid JSON or not pacing rules.
    """
    found = _record(folder)
    return None if found is None else PacingRules.from_dict(found[1]["rules"])


def trained_end_note(folder: str | Path) -> str | None:
    """Where ``folder``'s VideoScout prompt placed the note that a window ends the video.

    ``None`` when the record names none, as records written before the setting existed
    (those are ``window``'s or, earlier, ``off``'s).

    Raises:
        ConfigError: As :func:`trained_rules`, or when ``end_note`` is not a place.
    """
    return _end_note(_record(folder))


def trained_question_first(folder: str | Path) -> bool | None:
    """Whether ``folder``'s VideoScout prompt put the question before the frames.

    ``None`` when the record says nothing (records written before the setting existed:
    the paper's order, question after the frames).

    Raises:
        ConfigError: As :func:`trained_rules`, or when the value is not a boolean.
    """
    return _question_first(_record(folder))


def trained_layout(
    folder: str | Path, *, end_note: str | None = None, question_first: bool | None = None
) -> PromptLayout:
    """The prompt layout to run ``folder``'s model with.

    Each field is the one given, else ``folder``'s record, else the default
    (:data:`DEFAULT_LAYOUT`).

    Raises:
        ConfigError: As :func:`trained_end_note` and :func:`trained_question_first`.
    """
    found = _record(folder)
    note = end_note or _end_note(found) or DEFAULT_LAYOUT.end_note
    if question_first is None:
        question_first = bool(_question_first(found))
    return PromptLayout(note, question_first)


def _end_note(found: tuple[Path, dict[str, Any]] | None) -> str | None:
    """The end-note place of a record (:func:`_record`), ``None`` when it names none."""
    if found is None or "end_note" not in found[1]:
        return None
    note = found[1]["end_note"]
    if note not in END_NOTE_PLACES:
        raise ConfigError(f"{found[0]}: end_note must be one of {END_NOTE_PLACES}, got {note!r}")
    return str(note)


def _question_first(found: tuple[Path, dict[str, Any]] | None) -> bool | None:
    """Whether a record (:func:`_record`) puts the question first, ``None`` when unsaid."""
    if found is None or "question_first" not in found[1]:
        return None
    value = found[1]["question_first"]
    if not isinstance(value, bool):
        raise ConfigError(f"{found[0]}: question_first must be true or false, got {value!r}")
    return value


def _record(folder: str | Path) -> tuple[Path, dict[str, Any]] | None:
    """``folder``'s record and its path (a ``checkpoint-N`` folder's run's), or ``None``."""
    path = Path(folder) / RULES_FILE
    if not path.is_file() and Path(folder).name.startswith("checkpoint-"):
        path = Path(folder).parent / RULES_FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: not JSON ({err})") from err
    if not isinstance(record, dict) or not isinstance(record.get("rules"), dict):
        raise ConfigError(f"{path}: no 'rules' object")
    return path, record
