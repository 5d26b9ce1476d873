"""Moved: VideoScout's checkpoint record and prompt layout are the policy's own.

``video_env`` holds no policy's prompt. The record of the rules and prompt layout a
checkpoint was trained under is :mod:`policies.videoscout_record`; the layout itself
(``PromptLayout``, ``END_NOTE_PLACES``) is :mod:`policies.videoscout_prompt`; the pacing
presets (``pixel_vlm_rules``, ``rules_name``) are :mod:`video_env.envs.pacing_rules`.
"""

from __future__ import annotations

from video_env.envs.pacing_rules import pixel_vlm_rules, rules_name

__all__ = ["pixel_vlm_rules", "rules_name"]


def __getattr__(name: str) -> object:
    if name.startswith("__"):  # the import system's own lookups
        raise AttributeError(name)
    raise ImportError(  # not AttributeError: ``from ... import`` shows this text
        f"video_env.envs.rules_record.{name}: VideoScout's prompt layout and checkpoint "
        "record are the policy's own now, in policies.videoscout_prompt (PromptLayout, "
        "END_NOTE_PLACES, DEFAULT_LAYOUT, check_end_note) and policies.videoscout_record "
        "(RULES_FILE, save_trained_rules, trained_rules, trained_layout, ...)"
    )
