"""The shipped VideoScout policy checkpoints (transformers folders, pixel VLM descendants).

Both are the pixel VLM (``video_env/pixel/vlm_weights``) trained into VideoScout's
Think-Act format on the pixel world's training videos, by the laboratory's recipe
(``experiments/videoscout_pixel``): results from them are labelled ``pixel-vlm``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["VIDEOSCOUT_DAPO_DIR", "VIDEOSCOUT_SFT_DIR"]

#: The VideoScout policy after SFT on teacher turns; ``videoscout:pixel`` runs it.
VIDEOSCOUT_SFT_DIR = Path(__file__).parent / "videoscout_pixel_sft"
#: :data:`VIDEOSCOUT_SFT_DIR` after free-rollout DAPO in the Pacing env;
#: ``videoscout:pixel-dapo`` runs it.
VIDEOSCOUT_DAPO_DIR = Path(__file__).parent / "videoscout_pixel_dapo"
