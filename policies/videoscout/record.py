"""The pacing rules and prompt layout a VideoScout checkpoint (or dataset) was made under.

A model trained in the Pacing env learned its frames: how many a turn and at what size.
``videoscout.json`` in the model's folder records those :class:`PacingRules`
(:meth:`PacingRules.to_dict`), so that whoever runs the model by its folder runs it under
the same rules. The training commands write it, and so does the pixel VLM's training
(``python -m experiments.pixel_models vlm``) for the pixel VLM (its 16:9 frames,
:func:`~video_env.envs.pacing_rules.pixel_vlm_rules`). A model trained on VideoScout turns
also learned its prompt: the record keeps where that prompt placed the note that a window
ends the video (``end_note``, :func:`trained_end_note`) and whether it put the question
before the frames (``question_first``, :func:`trained_question_first`); the two together
are its :class:`~policies.videoscout.prompt.PromptLayout` (:func:`trained_layout`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from policies.videoscout.prompt import (
    DEFAULT_LAYOUT,
    END_NOTE_PLACES,
    PromptLayout,
    check_end_note,
)
from video_env.envs.pacing_rules import PacingRules
from video_env.errors import ConfigError

__all__ = [
    "RULES_FILE",
    "save_trained_rules",
    "trained_end_note",
    "trained_layout",
    "trained_question_first",
    "trained_rules",
]

#: The file in a data or checkpoint folder naming the pacing rules it was made under.
RULES_FILE = "videoscout.json"


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
