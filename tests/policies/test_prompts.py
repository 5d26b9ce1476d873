"""Snapshot tests of the prompt templates (UPDATE_SNAPSHOTS=1 rewrites the snapshots)."""

import os
from pathlib import Path

import pytest

from policies import prompts
from video_env import ConfigError

SNAPSHOTS = Path(__file__).parents[1] / "snapshots" / "prompts"
CAPTIONS = "[0-60s] a kitchen with white cabinets\n[60-120s] a street sign; a busy city street"
EVALUATIONS = '[60-120s] answer: "B" | confidence: 0.41 | caption: a street sign'
OPTIONS = prompts.options_block(["MAPLE", "HARBOR", "ZENITH", "COBALT"])
VALUES = {
    "falconeye/summary": {
        "duration": "120",
        "captions": CAPTIONS,
    },
    "falconeye/reasoning": {
        "duration": "120",
        "summary": "A kitchen, then a street.",
        "captions": CAPTIONS,
        "question": "What is written on the street sign?",
        "options_block": OPTIONS,
        "n_candidates": 5,
    },
    "falconeye/decision": {
        "duration": "120",
        "summary": "A kitchen, then a street.",
        "question": "What is written on the street sign?",
        "options_block": OPTIONS,
        "evaluations": EVALUATIONS,
        "zoomable": "[60, 120]",
        "budget_left": 44,
        "threshold": 0.9,
        "choices": '- "zoom": ...\n- "reason": ...',
    },
    "falconeye/final": {
        "duration": "120",
        "summary": "A kitchen, then a street.",
        "question": "What is written on the street sign?",
        "options_block": OPTIONS,
        "evaluations": EVALUATIONS,
    },
    "videoagent/predict": {
        "num_frames": "120",
        "duration": "120",
        "captions": "frame 1: a kitchen\nframe 120: a street",
        "question": "What is written on the street sign?",
        "options_block": prompts.options_block([]),
    },
    "videoagent/reflect": {
        "num_frames": "120",
        "duration": "120",
        "captions": "frame 1: a kitchen\nframe 120: a street",
        "question": "What is written on the street sign?",
        "options_block": prompts.options_block([]),
        "prediction": "Answer: MAPLE\nReasoning: (none)",
    },
    "videoagent/find_frames": {
        "num_frames": "120",
        "duration": "120",
        "captions": "frame 1: a kitchen\nframe 120: a street",
        "segments": "1: frames 1 - 120 (0s to 119s)",
        "n_segments": 1,
        "query_limit": "",
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
    "videoscout/tools_system": {
        "speeds": "- speed(1x): the next 1 chunk with 20 frames at 448x448",
        "rewatch": "20 frames at 448x448",
        "memory_words": 200,
    },
    "videoscout/window": {
        "turn": 3,
        "n_chunks": 12,
        "watched": 7,
        "progress": 58,
        "end_note": "",
        "view": "at 4x",
        "first": 4,
        "last": 7,
        "start": "60",
        "end": "120",
        "n_frames": 12,
        "size": "316x316",
        "times": "62.5s, 67.5s",
    },
    "videoscout/ask": {
        "question": "What is written on the street sign?",
        "options_block": OPTIONS,
    },
    "videoscout/memory": {
        "memory": "A kitchen, then a street.",
        "feedback": "Your last reply was invalid: no action found\n",
        "end_note": "",
    },
    "videoscout/question": {
        "memory": "A kitchen, then a street.",
        "feedback": "Your last reply was invalid: no action found\n",
        "question": "What is written on the street sign?",
        "options_block": OPTIONS,
        "end_note": "",
    },
    # the prompted tool agents' prompts (policies/tool_agents/, docs/fidelity.md)
    "videoseek/system": {
        "max_steps": 20,
        "overview_frames": 64,
        "skim_frames": 16,
        "focus_frames": 16,
        "example": '{"name": "skim", "arguments": {"query": "the red car", "start_time": 0}}',
    },
    "videoseek/question": {
        "duration": "120.0",
        "question": "What is written on the street sign?",
        "options_block": OPTIONS,
    },
    "videoseek/step": {"step": 3, "max_steps": 20},
    "videoseek/final": {
        "question": "What is written on the street sign?",
        "options_block": OPTIONS,
    },
    "dvd/system": {
        "tools": "- clip_search_tool(event_description, top_k): the captions of the clips",
        "example": '{"name": "clip_search_tool", "arguments": {"event_description": "a sign"}}',
    },
    "dvd/question": {
        "max_iterations": 15,
        "duration": "120",
        "question": "What is written on the street sign?",
        "options_block": OPTIONS,
    },
    "dvd/finish": {},
    # the trained tool agents' prompts (policies/tool_dialects/, docs/fidelity.md)
    "tool_dialects/hermes_system": {
        "system": "You are a helpful assistant.\n\n",
        "tools": '{"type": "function", "function": {"name": "crop_video"}}',
    },
    "tool_dialects/longvt_question": {
        "question": "What is written on the street sign?\nA. MAPLE\nB. HARBOR",
        "video_path": "/video.mp4",
    },
    "tool_dialects/videozoomer_system": {},
    "tool_dialects/framethinker_system": {"num_frames": 8},
    "tool_dialects/timesearch_question": {
        "max_rounds": 8,
        "question": "What is written on the street sign?\nA. MAPLE\nB. HARBOR",
        "answer_note": "Answer with the option's letter from the given choices within "
        "<answer> </answer> tags.\n",
        "duration": "120.0",
    },
    "tool_dialects/timesearch_tool_response": {"timestamps": "60.5s,62.0s"},
    "tool_dialects/videomtr_system": {"max_turns": 3},
    "tool_dialects/videomtr_turn": {"turn": 1, "n_frames": 2, "frame_idx_list": [0, 63]},
    "tool_dialects/videomtr_ask": {
        "which": "",
        "problem": "What is written on the street sign?\nOptions: ['A. MAPLE', 'B. HARBOR']",
        "action_prompt": "You can choose to retrieve more frames or provide your answer.",
        "format_prompt": "Format Template: ...",
    },
    "tool_dialects/videomtr_format": {
        "answer_type_instruction": " Please provide only the single option letter",
        "max_frame_idx": 63,
    },
    "tool_dialects/videomtr_format_final": {
        "answer_type_instruction": " Please provide only the single option letter",
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


#: What each prompt must carry, after the papers' figures and the released code's prompts
#: (docs/fidelity.md): a rendered prompt missing one of these is not the paper's prompt.
REQUIRED = {
    "falconeye/summary": ["120-second video", "[0-60s] a kitchen", "summary outlining"],
    "falconeye/reasoning": [
        "A kitchen, then a street.",  # the summary
        "[60-120s] a street sign",  # captions of unexplored clips
        "not necessarily 5",  # m <= n clips, chosen by the LLM
        "none\nif no clip",  # m = 0 allowed
        "What is written on the street sign?",
        "Sort them by likelihood",
        '"candidates"',
    ],
    "falconeye/decision": [
        "A kitchen, then a street.",  # the summary
        'answer: "B" | confidence: 0.41 | caption: a street sign',  # per window
        "answers the question completely",  # answer completeness
        "Confidence scores",
        "Captions.",
        "Temporal windows",
        "[60, 120]",  # the windows that can be zoomed into
        '"decision"',
        '"zoom"',
    ],
    "falconeye/final": [
        "A kitchen, then a street.",
        'answer: "B" | confidence: 0.41 | caption: a street sign',
        "Do **not** simply return the highest-confidence response",
        '"final_answer"',
        '"window"',
    ],
    "videoagent/predict": [
        "has 120 frames, the frames are decoded at 1 fps",  # frame numbers at 1 fps
        "frame 1: a kitchen",
        "think step-by-step",
        '"final_answer"',
    ],
    "videoagent/reflect": [
        "has 120 frames, the frames are decoded at 1 fps",
        "Insufficient Information (Confidence Level: 1)",
        "Partial Information (Confidence Level: 2)",
        "Sufficient Information (Confidence Level: 3)",
        "Assessment Focus:",
        "relevance, completeness, and clarity",
        "Answer: MAPLE",  # the decision-making process under assessment
        '"confidence"',
    ],
    "videoagent/find_frames": [
        "has 120 frames, the frames are decoded at 1 fps",
        "1: frames 1 - 120 (0s to 119s)",  # segment durations
        "Select multiple frames from one segment",
        '"segment_id"',
        '"duration"',
        '"frame_descriptions"',
    ],
    # VideoSeek's released prompt outline; DVD's dvd_core.py prompts (docs/fidelity.md)
    "videoseek/system": [
        *("# Role", "# Environment", "# State", "# Workflow", "# Toolkit", "# Rules"),
        "Thought -> Action -> Observation",
        "Call ONLY ONE tool per turn",
        "at least\n  16 seconds",  # skim spans
        "shorter than 16 seconds",  # focus clips
        "at most 20 steps",
    ],
    "videoseek/final": ["You have reached the maximum number of steps.", "option's\nletter"],
    "dvd/system": ["THINK -> ACT -> OBSERVE", "call exactly one function", "never invent them"],
    "dvd/question": [
        "use\n  `global_browse_tool`",
        "To search without a specific timestamp, use `clip_search_tool`",
        "CONFIRM it with a `frame_inspect_tool`",
        "Total video length: 120 seconds.",
    ],
}


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_prompt_carries_the_papers_fields(name: str) -> None:
    rendered = prompts.render(name, **VALUES[name])
    missing = [text for text in REQUIRED[name] if text not in rendered]
    assert not missing, f"{name} lacks {missing}"
