"""Where a result's perception came from: one set of labels, rendered by one function.

Every backend, perception and policy model says what it is with the same flags
(``simulated``, ``pixel_real``, ``pixel_vlm``, ``random_weights``), episode records keep
them (and ``sensors_on_real_video`` for simulated sensors on a real file's frames,
``standin`` for a missing file played as a simulated stand-in), and this module
is the one place that reads them: :func:`object_labels` off an object, :func:`record_labels`
off a record, :func:`record_flags` to write them, and :func:`perception_notes` /
:func:`perception_label` to say them — after a bench, in summaries and in ``summary.md``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from video_env.backends.random_weights import LABEL as RANDOM_WEIGHTS_NOTE

__all__ = [
    "FLAGS",
    "LABELS",
    "PIXEL_REAL",
    "PIXEL_VLM",
    "RANDOM_WEIGHTS",
    "SENSORS_ON_REAL",
    "SENSORS_ON_REAL_NOTE",
    "SIMULATED",
    "STANDIN",
    "STANDIN_NOTE",
    "VIDEO_NOTES",
    "Provenance",
    "VideoProvenanceWarning",
    "info_flags",
    "object_labels",
    "perception_label",
    "perception_notes",
    "record_flags",
    "record_labels",
]

SIMULATED = "simulated"
STANDIN = "stand-in"
SENSORS_ON_REAL = "simulated sensors on real video"
PIXEL_REAL = "pixel-real"
PIXEL_VLM = "pixel-vlm"
RANDOM_WEIGHTS = "random-weights"


class VideoProvenanceWarning(UserWarning):
    """An env plays simulated sensors on a real file, or a stand-in of a missing one."""


#: The labels, most telling first (a simulated result is simulated whatever else it is).
LABELS = (STANDIN, SENSORS_ON_REAL, SIMULATED, PIXEL_VLM, PIXEL_REAL, RANDOM_WEIGHTS)
#: The attribute (and record key) each label is read from.
FLAGS: Mapping[str, str] = {
    SIMULATED: "simulated",
    STANDIN: "standin",
    SENSORS_ON_REAL: "sensors_on_real_video",
    PIXEL_REAL: "pixel_real",
    PIXEL_VLM: "pixel_vlm",
    RANDOM_WEIGHTS: "random_weights",
}

#: What episodes on stand-ins are (after their count).
STANDIN_NOTE = (
    "ran on simulated stand-ins of missing video files: their frames are synthetic and "
    "their perception is simulated from the annotations (intervals, answer, options)"
)
#: What episodes of simulated sensors on real files are (after their count).
SENSORS_ON_REAL_NOTE = (
    "ran simulated sensors on real video: the frames are the files' own, but the simulated "
    "VLM, captioner and CLIP answered from the annotations (intervals, answer, options)"
)
#: The labels of a dataset's videos: what their episodes are (after a count).
VIDEO_NOTES: Mapping[str, str] = {STANDIN: STANDIN_NOTE, SENSORS_ON_REAL: SENSORS_ON_REAL_NOTE}
#: What each label means, said once (the CLI, run.json, Markdown and plots take these).
_NOTES = {
    SIMULATED: "Perception: SIMULATED (synthetic world and simulated VLM/captioner/CLIP, "
    "see docs/simulator.md). These numbers measure exploration strategies in the "
    "simulator, not any model.",
    PIXEL_VLM: "Perception: PIXEL-VLM (a tiny Qwen2.5-VL trained on the synthetic world's "
    "pixels, see docs/pixel_vlm.md). Not simulated, and not a real model's result.",
    PIXEL_REAL: "Perception: PIXEL-REAL (synthetic world perceived from its rendered pixels "
    "by tiny models trained on it, see docs/pixel_real.md). Not simulated, and not a real "
    "model's result.",
    RANDOM_WEIGHTS: f"{RANDOM_WEIGHTS_NOTE.upper()}: a checkpoint the tiny test builders "
    "made; these numbers test the plumbing, not a model.",
}

#: The SIMULATED note of a dataset's episodes (real files or stand-ins of missing ones).
_DATASET_SIMULATED_NOTE = (
    "Perception: SIMULATED (simulated VLM/captioner/CLIP answering from the dataset's "
    "annotations, see docs/simulator.md). These numbers measure exploration strategies in "
    "the simulator, not any model."
)


def object_labels(obj: Any) -> frozenset[str]:
    """The labels an object (a backend, a perception, a model) carries by its flags."""
    return frozenset(label for label, flag in FLAGS.items() if getattr(obj, flag, False) is True)


def record_flags(labels: Iterable[str]) -> dict[str, bool]:
    """Every flag of a record for ``labels``.

    A stand-in episode, or one of simulated sensors on a real file, is simulated, and a
    simulated one neither pixel-real nor pixel-vlm (what it perceived is the simulator's),
    whatever its models are.
    """
    found = set(labels)
    if found & {STANDIN, SENSORS_ON_REAL}:
        found.add(SIMULATED)
    if SIMULATED in found:
        found -= {PIXEL_REAL, PIXEL_VLM}
    return {flag: label in found for label, flag in FLAGS.items()}


def info_flags(labels: Iterable[str]) -> dict[str, bool]:
    """The flags an env's ``info`` carries each step (all but random weights)."""
    flags = record_flags(labels)
    return {key: value for key, value in flags.items() if key != FLAGS[RANDOM_WEIGHTS]}


def record_labels(record: Mapping[str, Any]) -> frozenset[str]:
    """The labels of an episode record (its flags as written)."""
    return frozenset(label for label, flag in FLAGS.items() if record.get(flag) is True)


@dataclass(frozen=True)
class Provenance:
    """The labels of a set of episodes: how many episodes carry each.

    Attributes:
        counts: Episodes by label.
        episodes: Episodes in all.
    """

    counts: Mapping[str, int]
    episodes: int

    @classmethod
    def of(cls, records: Iterable[Mapping[str, Any]]) -> Provenance:
        """The provenance of ``records``."""
        counts: Counter[str] = Counter()
        episodes = 0
        for record in records:
            episodes += 1
            counts.update(record_labels(record))
        return cls(dict(counts), episodes)

    def has(self, label: str) -> bool:
        """Whether any episode carries ``label``."""
        return self.counts.get(label, 0) > 0


def perception_label(records: Iterable[Mapping[str, Any]]) -> str:
    """A result's perception in a few words: ``simulated``, ``pixel-vlm``, ``real``, ...

    Simulated sensors on real files say so (``simulated sensors on real video``), stand-ins
    are counted (``simulated (3 of 12 on stand-ins, 9 on real video)``); random weights add
    ``, random weights (plumbing test)``.
    """
    seen = Provenance.of(records)
    if seen.has(SIMULATED):
        standins, on_real = seen.counts.get(STANDIN, 0), seen.counts.get(SENSORS_ON_REAL, 0)
        if standins:
            real = f", {on_real} on real video" if on_real else ""
            return f"{SIMULATED} ({standins} of {seen.episodes} on stand-ins{real})"
        return SENSORS_ON_REAL if on_real else SIMULATED
    label = next((lab for lab in (PIXEL_VLM, PIXEL_REAL) if seen.has(lab)), "real")
    return label + (f", {RANDOM_WEIGHTS_NOTE}" if seen.has(RANDOM_WEIGHTS) else "")


def perception_notes(
    records: Iterable[Mapping[str, Any]], random_weight_sources: Sequence[str] = ()
) -> list[str]:
    """The sentences that must stand beside a result, most telling first (none: real).

    A stand-in note counts its episodes; a simulated result is not also called pixel-real.
    ``random_weight_sources`` names the roles or specs (an LLM, a policy's model) that
    loaded random weights, which the records' perception flags may not show.
    """
    seen = Provenance.of(records)
    notes = []
    for label, note in VIDEO_NOTES.items():
        if seen.has(label):
            notes.append(f"{seen.counts[label]} of {seen.episodes} episodes {note}.")
    if seen.has(SIMULATED) and (seen.has(STANDIN) or seen.has(SENSORS_ON_REAL)):
        notes.append(_DATASET_SIMULATED_NOTE)  # a dataset's videos, not the synthetic world
    elif seen.has(SIMULATED):
        notes.append(_NOTES[SIMULATED])
    elif seen.has(PIXEL_VLM) or seen.has(PIXEL_REAL):
        notes.append(_NOTES[PIXEL_VLM if seen.has(PIXEL_VLM) else PIXEL_REAL])
    if random_weight_sources:
        notes.append(f"{RANDOM_WEIGHTS_NOTE.upper()}: {', '.join(random_weight_sources)} "
                     "loaded a checkpoint the tiny test builders made; these numbers test the "
                     "plumbing, not a model.")  # fmt: skip
    elif seen.has(RANDOM_WEIGHTS):
        notes.append(_NOTES[RANDOM_WEIGHTS])
    return notes
