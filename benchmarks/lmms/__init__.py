"""video-env in lmms-eval (the ``lmms`` extra): its agents as a model, its envs as tasks.

* ``--model video_env --model_args policy=falconeye,vlm=SPEC,llm=SPEC``: a video-env policy
  answers any lmms-eval video task (:mod:`benchmarks.lmms.model`), found through the
  ``lmms_eval.models`` entry point (:func:`model_manifest`).
* ``--include_path $(python -m benchmarks.lmms) --tasks video_env_zoom_synth``: the three
  environments as ``generate_until_agentic`` tasks any lmms-eval model drives with the
  envs' text actions (:mod:`benchmarks.lmms.agentic`, YAMLs in :data:`TASKS_DIR`).

It lives in ``benchmarks`` because the model plays policies (``video_env`` may not import
them) and it is an evaluation harness, as ``video-env bench`` is. Importing this package
imports neither lmms_eval nor a model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["MODEL_ID", "TASKS_DIR", "model_manifest"]

#: The model's name in lmms-eval (``--model video_env``).
MODEL_ID = "video_env"
#: The task YAMLs, for lmms-eval's ``--include_path``.
TASKS_DIR = Path(__file__).resolve().parent / "tasks"


def model_manifest() -> Any:
    """lmms-eval's ``ModelManifest`` of the model (the ``lmms_eval.models`` entry point)."""
    from lmms_eval.models.registry_v2 import ModelManifest  # type: ignore[import-untyped, import-not-found, unused-ignore]

    return ModelManifest(model_id=MODEL_ID, simple_class_path="benchmarks.lmms.model.VideoEnvModel")
