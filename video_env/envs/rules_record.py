"""Moved: VideoScout's checkpoint record and prompt layout are the policy's own.

``video_env`` holds no policy's prompt. The record of the rules and prompt layout a
checkpoint was trained under is :mod:`policies.videoscout_record`; the layout itself
(``PromptLayout``, ``END_NOTE_PLACES``) is :mod:`policies.videoscout_prompt`; the pacing
presets (``pixel_vlm_rules``, ``rules_name``) are :mod:`video_env.envs.pacing_rules`.
"""

from __future__ import annotations

from video_env.envs.pacing_rules import pixel_vlm_rules, rules_name

__all__ = ["pixel_vlm_rules", "rules_name"]

_MOVED = {
    **dict.fromkeys(
        ("DEFAULT_LAYOUT", "END_NOTE_PLACES", "PromptLayout", "check_end_note"),
        "policies.videoscout_prompt",
    ),
    **dict.fromkeys(
        (
            "RULES_FILE",
            "save_trained_rules",
            "trained_end_note",
            "trained_layout",
            "trained_question_first",
            "trained_rules",
        ),
        "policies.videoscout_record",
    ),
}


def __getattr__(name: str) -> object:
    if name in _MOVED:
        raise AttributeError(
            f"video_env.envs.rules_record.{name} moved to {_MOVED[name]}.{name} "
            "(VideoScout's prompt and checkpoint record are the policy's own)"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
