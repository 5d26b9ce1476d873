"""What the task YAMLs' ``!function`` tags name (lmms-eval loads this file by its path)."""

from benchmarks.lmms.agentic import (
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    mean_known,
    process_results,
)
from benchmarks.lmms.task import VideoEnvTask

__all__ = [
    "VideoEnvTask",
    "doc_to_target",
    "doc_to_text",
    "doc_to_visual",
    "mean_known",
    "process_results",
]
