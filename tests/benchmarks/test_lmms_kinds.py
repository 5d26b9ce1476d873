"""The lmms-eval agentic task over every registered env kind (no lmms-eval run needed)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("loguru")

from benchmarks.lmms.agentic import doc_to_text, doc_to_visual
from benchmarks.lmms.task_docs import docs_for
from video_env.envs import ENV_CLASSES


@pytest.mark.parametrize("kind", sorted(ENV_CLASSES))
def test_every_kinds_episode_runs_as_an_agentic_task(kind: str) -> None:
    (doc,) = docs_for({"suite": "synth-tiny", "limit": 1, "env": kind, "max_turns": 2})
    first = doc_to_text(doc)
    assert isinstance(first, str) and doc["question"] in first
    images = doc_to_visual(doc)
    assert all(image.mode == "RGB" for image in images)
    _, text, terminal, outputs, info = doc_to_text(doc, previous_output=["x"], round_idx=1)
    assert not terminal and "invalid" in text and doc["question"] in text
    assert info["invalid_steps"] == 1
    *_, terminal, outputs, info = doc_to_text(
        doc, previous_output=["x", "y"], round_idx=2, previous_round_info=info
    )
    assert terminal and json.loads(outputs[-1])["ended_by"] == "max_turns"


def test_pacing_shows_its_frames_and_the_search_envs_none() -> None:
    (pacing,) = docs_for({"suite": "synth-tiny", "limit": 1, "env": "pacing"})
    (zoom,) = docs_for({"suite": "synth-tiny", "limit": 1, "env": "zoom"})
    assert len(doc_to_visual(pacing)) > 0 and doc_to_visual(zoom) == []
