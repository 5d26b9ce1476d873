"""One set of provenance labels, read in one place and said by one function."""

from __future__ import annotations

from types import SimpleNamespace

from video_env.backends.random_weights import LABEL
from video_env.provenance import (
    PIXEL_REAL,
    PIXEL_VLM,
    RANDOM_WEIGHTS,
    SENSORS_ON_REAL,
    SIMULATED,
    STANDIN,
    Provenance,
    object_labels,
    perception_label,
    perception_notes,
    record_flags,
    record_labels,
)


def test_labels_are_read_off_objects_and_records_by_their_flags() -> None:
    model = SimpleNamespace(pixel_vlm=True, random_weights=True, simulated=False)
    assert object_labels(model) == {PIXEL_VLM, RANDOM_WEIGHTS}
    assert object_labels(SimpleNamespace(simulated="yes")) == set()  # a flag is a bool
    assert record_labels({"standin": True, "pixel_real": False}) == {STANDIN}


def test_a_simulated_or_stand_in_episode_is_never_pixel_real_or_pixel_vlm() -> None:
    flags = record_flags({STANDIN, PIXEL_REAL, RANDOM_WEIGHTS})
    assert flags == {
        "simulated": True, "standin": True, "sensors_on_real_video": False,
        "pixel_real": False, "pixel_vlm": False, "random_weights": True,
    }  # fmt: skip
    on_real = record_flags({SENSORS_ON_REAL, PIXEL_VLM})
    assert on_real["simulated"] and on_real["sensors_on_real_video"] and not on_real["pixel_vlm"]
    assert record_flags({PIXEL_VLM})["pixel_vlm"] and not record_flags({PIXEL_VLM})["simulated"]
    assert record_labels(record_flags({SIMULATED, PIXEL_VLM})) == {SIMULATED}


def test_the_label_and_the_notes_of_a_set_of_episodes() -> None:
    real = [{"simulated": False}]
    assert perception_label(real) == "real" and perception_notes(real) == []
    pixel = [record_flags({PIXEL_REAL}), record_flags({PIXEL_VLM, RANDOM_WEIGHTS})]
    assert perception_label(pixel) == f"pixel-vlm, {LABEL}"
    notes = perception_notes(pixel)
    assert [n.split(" ")[0] for n in notes] == ["Perception:", LABEL.upper().split(" ")[0]]
    assert "PIXEL-VLM" in notes[0]
    mixed = [record_flags({STANDIN}), record_flags({PIXEL_REAL}), record_flags(set())]
    assert perception_label(mixed) == "simulated (1 of 3 on stand-ins)"
    notes = perception_notes(mixed)
    assert notes[0].startswith("1 of 3 episodes ran on simulated stand-ins")
    assert "SIMULATED" in notes[1] and not any("PIXEL" in n for n in notes)
    assert Provenance.of(mixed).counts == {STANDIN: 1, SIMULATED: 1, PIXEL_REAL: 1}
    own = [record_flags({SENSORS_ON_REAL}), record_flags({STANDIN})]
    assert perception_label(own) == "simulated (1 of 2 on stand-ins, 1 on real video)"
    notes = perception_notes(own)
    assert notes[0].startswith("1 of 2 episodes ran on simulated stand-ins of missing video")
    assert notes[1].startswith("1 of 2 episodes ran simulated sensors on real video")


def test_random_weights_named_by_their_sources_stand_beside_any_result() -> None:
    """An LLM or a policy's model with random weights leaves no perception flag: named."""
    notes = perception_notes([record_flags(set())], ["llm", "policy videoscout:x"])
    assert notes == [
        f"{LABEL.upper()}: llm, policy videoscout:x loaded a checkpoint the tiny test builders "
        "made; these numbers test the plumbing, not a model."
    ]
