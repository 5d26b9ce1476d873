"""VideoScout: a vision-language model pacing through a long video (the Pacing env).

The policy (:mod:`~policies.videoscout.policy`), its prompt and reply parsing
(:mod:`~policies.videoscout.prompt`), the reply pattern its guided decoding holds to
(:mod:`~policies.videoscout.think_act_pattern`), the record a checkpoint keeps of the rules
and layout it was trained under (:mod:`~policies.videoscout.record`), and its tool-calling
form (:mod:`~policies.videoscout.tools`, :mod:`~policies.videoscout.tool_calls`).
"""

from policies.videoscout.policy import (
    END_NOTE,
    SHIPPED,
    VideoScoutPolicy,
    legal_kinds,
    make_videoscout,
    resolve_vision_chat,
)

__all__ = [
    "END_NOTE",
    "SHIPPED",
    "VideoScoutPolicy",
    "legal_kinds",
    "make_videoscout",
    "resolve_vision_chat",
]
