"""The pixel-real offline world: tiny real models trained on the synthetic renderer.

``video-env train perception`` renders training data from generated videos (disjoint from
every suite), trains a tiny ``open_clip.CLIP`` and writes it, in open_clip's ``local-dir``
layout, to :data:`WEIGHTS_DIR` (shipped inside the package).
:meth:`video_env.envs.perception.Perception.pixel_real` loads it: ClipQuery retrieves with
it from rendered pixels; the VLM role scores options over tiles of the env's frames; the
captioner names what it detects. Results are labelled ``pixel-real`` (not simulated, not
a real-model result). See ``docs/pixel_real.md``.
"""

from __future__ import annotations

from pathlib import Path

#: Folder of the shipped pixel-real CLIP (``OpenCLIP(str(WEIGHTS_DIR))`` loads it).
WEIGHTS_DIR = Path(__file__).parent / "weights"

__all__ = ["WEIGHTS_DIR"]
