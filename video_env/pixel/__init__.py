"""The pixel-real offline world: tiny real models trained on the synthetic renderer.

``video-env train perception`` renders training data from generated videos (disjoint from
every suite), trains a tiny ``open_clip.CLIP`` and writes it, in open_clip's ``local-dir``
layout, to :data:`WEIGHTS_DIR` (shipped inside the package).
:meth:`video_env.envs.perception.Perception.pixel_real` loads it: ClipQuery retrieves with
it from rendered pixels; the VLM role scores options over tiles of the env's frames; the
captioner names what it detects. Results are labelled ``pixel-real`` (not simulated, not
a real-model result). See ``docs/pixel_real.md``.

``video-env train vlm`` trains the *pixel VLM*, a tiny generative Qwen2.5-VL, on the same
renderer (:mod:`video_env.pixel.vlm_pipeline`) and writes a transformers checkpoint to
:data:`PIXEL_VLM_DIR`; ``--perception pixel-vlm`` runs it through the transformers
backend. See ``docs/pixel_vlm.md``.
"""

from __future__ import annotations

from pathlib import Path

#: Folder of the shipped pixel-real CLIP (``OpenCLIP(str(WEIGHTS_DIR))`` loads it).
WEIGHTS_DIR = Path(__file__).parent / "weights"
#: Folder of the shipped pixel VLM, a transformers checkpoint (``video-env train vlm``):
#: ``TransformersVLM(str(PIXEL_VLM_DIR))`` or ``--vlm qwen2.5-vl:FOLDER`` loads it.
PIXEL_VLM_DIR = Path(__file__).parent / "vlm_weights"
#: Folder of the shipped VideoScout SFT policy: the pixel VLM after SFT on teacher turns
#: (``docs/training.md``); ``videoscout:pixel`` runs it.
VIDEOSCOUT_DIR = Path(__file__).parent / "videoscout_weights"
#: Folder of the shipped VideoScout policy after DAPO: :data:`VIDEOSCOUT_DIR` trained on by
#: free-rollout DAPO in the Pacing env (``docs/training.md``); ``videoscout:pixel-dapo``
#: runs it.
VIDEOSCOUT_DAPO_DIR = Path(__file__).parent / "videoscout_dapo_weights"

#: The provenance file ``video-env train vlm`` writes: it marks a folder as the pixel VLM.
PIXEL_VLM_MARKER = "pixel_vlm.json"

__all__ = [
    "PIXEL_VLM_DIR",
    "PIXEL_VLM_MARKER",
    "VIDEOSCOUT_DAPO_DIR",
    "VIDEOSCOUT_DIR",
    "WEIGHTS_DIR",
    "is_pixel_vlm",
]


def is_pixel_vlm(model: str | Path) -> bool:
    """Whether ``model`` is a folder of the pixel VLM (results are labelled ``pixel-vlm``)."""
    folder = Path(str(model)).expanduser()
    return folder.is_dir() and (folder / PIXEL_VLM_MARKER).is_file()
