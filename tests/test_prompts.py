"""Snapshot tests of the prompt templates (UPDATE_SNAPSHOTS=1 rewrites the snapshots)."""

import os
from pathlib import Path

import pytest

from policies import prompts
from video_env import ConfigError

SNAPSHOTS = Path(__file__).parent / "snapshots" / "prompts"
CAPTIONS = "[0-60s] a kitchen with white cabinets\n[60-120s] a street sign; a busy city street"
OPTIONS = prompts.options_block(["MAPLE", "HARBOR", "ZENITH", "COBALT"])
VALUES = {
    "falconeye/summary": {
        "duration": "120",
        "captions": CAPTIONS,
        "max_words": 150,
        "question": "What is written on the street sign?",
    },
    "falconeye/reasoning": {
        "duration": "120",
        "question": "What is written on the street sign?",
        "options_block": OPTIONS,
        "summary": "A kitchen, then a street.",
        "captions": CAPTIONS,
        "explored": "none",
        "n_candidates": 3,
    },
    "falconeye/decision": {
        "duration": "120",
        "question": "What is written on the street sign?",
        "options_block": OPTIONS,
        "evaluations": "[60-120s] B (0.41)",
        "budget_left": 44,
        "threshold": 0.9,
        "max_zoom": 1,
    },
    "falconeye/final": {
        "evaluations": "[60-120s] B (0.41)",
        "question": "What is written on the street sign?",
        "options_block": OPTIONS,
    },
    "videoagent/predict": {
        "duration": "120",
        "captions": "Frame 1 at 12.0s: a kitchen",
        "question": "What is written on the street sign?",
        "options_block": prompts.options_block([]),
    },
    "videoagent/reflect": {
        "duration": "120",
        "captions": "Frame 1 at 12.0s: a kitchen",
        "question": "What is written on the street sign?",
        "options_block": prompts.options_block([]),
        "prediction": "Answer: MAPLE\nReasoning: (none)",
    },
    "videoagent/find_frames": {
        "duration": "120",
        "captions": "Frame 1 at 12.0s: a kitchen",
        "segments": "Segment 1: 0.0s to 12.0s\nSegment 2: 12.0s to 120.0s",
        "max_queries": 2,
        "question": "What is written on the street sign?",
        "options_block": OPTIONS,
    },
    "baselines/socratic": {
        "captions": CAPTIONS,
        "question": "What is written on the street sign?",
        "options_block": OPTIONS,
    },
    "baselines/blind": {
        "question": "What is written on the street sign?",
        "options_block": OPTIONS,
    },
    "videoscout/system": {
        "actions": "- speed(1x) | speed(2x) | speed(4x)\n- rewatch(k)\n- answer(...)",
        "speeds": "- speed(1x): the next 1 chunk with 20 frames at 448x448",
        "rewatch": "20 frames at 448x448",
        "memory_words": 200,
    },
    "videoscout/window": {
        "turn": 3,
        "n_chunks": 12,
        "watched": 7,
        "progress": 58,
        "view": "at 4x",
        "first": 4,
        "last": 7,
        "start": "60",
        "end": "120",
        "n_frames": 12,
        "resolution": 316,
        "times": "62.5s, 67.5s",
    },
    "videoscout/question": {
        "memory": "A kitchen, then a street.",
        "feedback": "Your last reply was invalid: no action found\n",
        "question": "What is written on the street sign?",
        "options_block": OPTIONS,
    },
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_prompt_snapshot(name: str) -> None:
    rendered = prompts.render(name, **VALUES[name])
    path = SNAPSHOTS / f"{name.replace('/', '__')}.txt"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.write_text(rendered, encoding="utf-8")
    assert rendered == path.read_text(encoding="utf-8")


def test_every_template_has_a_snapshot() -> None:
    root = Path(prompts.__file__).parent
    names = {str(p.relative_to(root).with_suffix("")) for p in root.glob("*/*.txt")}
    assert names == set(VALUES)


def test_render_refuses_missing_and_unknown_fields() -> None:
    with pytest.raises(ConfigError, match="missing fields"):
        prompts.render("baselines/blind", question="q")
    with pytest.raises(ConfigError, match="unexpected"):
        prompts.render("baselines/blind", question="q", options_block="", extra=1)
    with pytest.raises(ConfigError, match="no prompt template"):
        prompts.template("nope/nothing")
