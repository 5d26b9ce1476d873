"""SIMULATED perception backends for the offline world (see ``docs/simulator.md``).

They answer from a :class:`~video_env.synth.SynthVideo`'s ground truth through a
documented noise model; they are simulators for research on exploration strategies,
never models, and every result they produce is labelled ``simulated``.
"""

from video_env.backends.simulated.captioner import SimCaptionerSettings, SimulatedCaptioner
from video_env.backends.simulated.clip import SimCLIPSettings, SimulatedCLIP
from video_env.backends.simulated.model import SensorSettings, evidence_frames
from video_env.backends.simulated.vlm import (
    ABSTAIN_TEXT,
    SimulatedVLM,
    SimVLMSettings,
    calibrated_draw,
)

__all__ = [
    "ABSTAIN_TEXT",
    "SensorSettings",
    "SimCLIPSettings",
    "SimCaptionerSettings",
    "SimVLMSettings",
    "SimulatedCLIP",
    "SimulatedCaptioner",
    "SimulatedVLM",
    "calibrated_draw",
    "evidence_frames",
]
