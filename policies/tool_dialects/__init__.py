"""VLM policies in the dialects of the trained tool-calling video agents (the Tools env).

One policy class (:class:`~policies.tool_dialects.policy.ToolDialectPolicy`) plays the
Tools presets of LongVT, VideoZoomer, TimeSearch-R, FrameThinker and Video-MTR, each in its
system's chat (:mod:`~policies.tool_dialects.dialects`): its system prompt, its frame
labels, its tool-result turns and its history. Registered as ``<preset>-vlm:SPEC``.
"""

from policies.tool_dialects.dialects import DIALECTS, Dialect, dialect
from policies.tool_dialects.policy import ToolDialectPolicy, make_dialect_policy

__all__ = ["DIALECTS", "Dialect", "ToolDialectPolicy", "dialect", "make_dialect_policy"]
