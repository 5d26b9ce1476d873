"""The pixel-real offline world: tiny real models trained on the synthetic renderer.

The laboratory (``python -m experiments.pixel_models perception``) renders training data
from generated videos (disjoint from every suite), trains a tiny ``open_clip.CLIP`` and
writes it, in open_clip's ``local-dir`` layout, to :data:`WEIGHTS_DIR` (shipped inside the
package).
:meth:`video_env.envs.perception.Perception.pixel_real` loads it: ClipQuery retrieves with
it from rendered pixels; the VLM role scores options over tiles of the env's frames; the
captioner names what it detects. Results are labelled ``pixel-real`` (not simulated, not
a real-model result). See ``docs/pixel_real.md``.

``python -m experiments.pixel_models vlm`` trains the *pixel VLM*, a tiny generative
Qwen2.5-VL, on the same renderer and writes a transformers checkpoint to
:data:`PIXEL_VLM_DIR`; ``--perception pixel-vlm`` runs it through the transformers
backend. See ``docs/pixel_vlm.md``.
"""

from __future__ import annotations

from pathlib import Path

#: Folder of the shipped pixel-real CLIP (``OpenCLIP(str(WEIGHTS_DIR))`` loads it).
WEIGHTS_DIR = Path(__file__).parent / "weights"
#: Folder of the shipped pixel VLM, a transformers checkpoint:
#: ``TransformersVLM(str(PIXEL_VLM_DIR))`` or ``--vlm qwen2.5-vl:FOLDER`` loads it.
PIXEL_VLM_DIR = Path(__file__).parent / "vlm_weights"
#: The provenance file the pixel VLM's training writes: it marks a folder as the pixel VLM.
PIXEL_VLM_MARKER = "pixel_vlm.json"

__all__ = [
    "PIXEL_VLM_DIR",
    "PIXEL_VLM_MARKER",
    "WEIGHTS_DIR",
    "is_pixel_vlm",
]


def is_pixel_vlm(model: str | Path) -> bool:
    """Whether ``model`` is a folder of the pixel VLM (results are labelled ``pixel-vlm``)."""
    folder = Path(str(model)).expanduser()
    return folder.is_dir() and (folder / PIXEL_VLM_MARKER).is_file()
