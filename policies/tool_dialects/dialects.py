"""Each trained system's chat: its system prompt, how it shows frames and tool results.

A :class:`Dialect` is data: three renderers (the opening user turn, a tool result, an
invalid call), the system prompt, where the system's generation stops and how many past
exchanges stay in the chat. The prompts are package data
(``policies/prompts/tool_dialects/``), copied from the released code
(``docs/fidelity.md``, "Dialect VLM policies"); the short wrappers below are quoted
with their file and lines (commits as in ``docs/tools.md``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from policies import prompts
from policies.tool_dialects.shown import Shown, frame_numbers, pool_indices, question_text
from video_env.backends.base import FrameBatch
from video_env.errors import UnknownNameError

__all__ = ["DIALECTS", "Dialect", "Parts", "dialect"]

Parts = list[str | FrameBatch]
"""A user turn's content: text and (single-frame or video) frame batches, in order."""


@dataclass(frozen=True)
class Dialect:
    """How one trained system talks to its model.

    Attributes:
        preset: The Tools preset whose tools the system calls.
        system: The system prompt, from the turn's input.
        opening: The first user turn (the question and the preview's frames).
        result: The user turn after a call that ran.
        error: The user turn after an invalid call.
        stop: Where the system stops generating (the reply is cut after it), if anywhere.
        window: Past exchanges kept in the chat (``None``: all of them).
    """

    preset: str
    system: Callable[[Shown], str]
    opening: Callable[[Shown], Parts]
    result: Callable[[Shown], Parts]
    error: Callable[[Shown], Parts]
    stop: str | None = None
    window: int | None = None


def _result_text(shown: Shown) -> str:
    return str(shown.result["text"]) if shown.result is not None else ""


def _labelled(shown: Shown, label: Callable[[int, float], str], sep: str = "") -> Parts:
    """Each frame after its label (``label(i, t)``), with ``sep`` between frames."""
    parts: Parts = []
    for i, (batch, t) in enumerate(zip(shown.frames, shown.times, strict=True)):
        if i and sep:
            parts.append(sep)
        parts += [label(i, t), batch]
    return parts


# -- LongVT: Qwen's Hermes tools, frames as images (examples/eval/single_inference.py) --

#: The tool schema the eval script passes (single_inference.py:L93-108).
LONGVT_TOOL = {
    "type": "function",
    "function": {
        "name": "crop_video",
        "description": "Crop a video to a specified duration. Use this tool to zoom in on "
        "specific time segments for detailed analysis.",
        "parameters": {
            "type": "object",
            "properties": {
                "video_path": {"type": "string", "description": "Path to the video file"},
                "start_time": {"type": "number", "description": "Start time in seconds"},
                "end_time": {"type": "number", "description": "End time in seconds"},
            },
            "required": ["video_path", "start_time", "end_time"],
        },
    },
}
#: The path the prompt names (the env ignores the model's ``video_path``).
VIDEO_PATH = "/video.mp4"


def _longvt_system(shown: Shown) -> str:
    # Qwen2.5-VL's chat template with tools and no system message
    tools = json.dumps(LONGVT_TOOL, ensure_ascii=False)
    return prompts.render(
        "tool_dialects/hermes_system", system="You are a helpful assistant.\n\n", tools=tools
    )


def _longvt_opening(shown: Shown) -> Parts:
    text = prompts.render(
        "tool_dialects/longvt_question", question=question_text(shown.observation),
        video_path=VIDEO_PATH,
    )  # fmt: skip
    return [*shown.frames, text]  # single_inference.py:L215-217: frames, then the text


def _longvt_result(shown: Shown) -> Parts:
    args = shown.call.arguments if shown.call is not None else {}
    span = f"{args.get('start_time')}s-{args.get('end_time')}s"
    if not shown.frames:
        return [f"<tool_response>\n{_result_text(shown)}\n</tool_response>"]
    text = f"Cropped {span}, got {len(shown.frames)} frames."  # single_inference.py:L288
    return ["<tool_response>\n", *shown.frames, f"\n{text}\n</tool_response>"]


def _longvt_error(shown: Shown) -> Parts:
    return [f"<tool_response>\nError: {shown.error}\n</tool_response>"]  # L296


# -- VideoZoomer (verl/workers/rollout/vllm_rollout/vllm_rollout_spmd_video.py) ---------

_ZOOM_LAST = (
    "Do not call <video_zoom> in this round, give a final answer based on information above."
)


def _zoom_frames(shown: Shown) -> Parts:
    # multimodal_dataset.py:L451, vllm_rollout_spmd_video.py:L385
    return _labelled(shown, lambda i, t: f"<frame{i}_time{t:.2f}s>")


def _zoom_last(shown: Shown) -> str:
    return _ZOOM_LAST if shown.turns_left == 1 else ""  # L387-388


def _zoom_opening(shown: Shown) -> Parts:
    return [*_zoom_frames(shown), "\n" + question_text(shown.observation)]


def _zoom_result(shown: Shown) -> Parts:
    head = "<tool_response>\nThe frames of the video clip are shown below:\n"  # L386
    tail = (
        "\n</tool_response>\ncontinue your reasoning process inside <think> and </think> and "
        "then write your final answer inside <answer> and </answer>"
    )
    return [head, *_zoom_frames(shown), tail + _zoom_last(shown)]


def _zoom_error(shown: Shown) -> Parts:
    wrapped = (  # L354, L396 (the source's "Countinue")
        "<tool_response>\nERROR occurs during the function tool call. Error Information: "
        f"{shown.error}.\n</tool_response>\nPlease analyze the error information obtained "
        "from the function tool and adjust your response. Countinue your reasoning process "
        "inside <think> and </think>."
    )
    return [wrapped + _zoom_last(shown)]


# -- TimeSearch-R (time_r1/dataset/lazy_dataset.py, time_r1/utils/video_tools.py) --------

#: seek_video_frames's schema (video_tools.py:L34-69), as qwen_agent lists it.
SEEK_TOOL = {
    "type": "function",
    "function": {
        "name": "seek_video_frames",
        "description": "Search and select video frames according to textual query and "
        "temporal window. Time is in seconds.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "The query is used to describe the object, scene, or event "
                    "of interest in the video thoroughly and clearly. ",
                },
                "start_time": {
                    "type": "number",
                    "description": "Start time of the segment of interest. ",
                },
                "end_time": {
                    "type": "number",
                    "description": "End time of the segment of interest. ",
                },
                "num_frames": {
                    "type": "integer",
                    "description": "Number of frames to sample (maximum 8). Default is 8.",
                },
            },
            "required": ["query"],
        },
    },
}
#: The env's reply to an unreadable call (time_r1/environment/video_env.py:L21-26).
TIMESEARCH_INVALID = (
    "\nThe previous response is invalid. If I want to use tools, I should output a json "
    "object with function name and arguments within <tool_call></tool_call> tags: \nIf I "
    "want to give the final answer, I should put the answer between <answer> and "
    "</answer>.\nLet me try again.\n"
)


def _seek_system(shown: Shown) -> str:
    # lazy_dataset.py:L47,L88: DEFAULT_SYSTEM_PROMPT, "\n", qwen_agent's NousFnCallPrompt
    tools = json.dumps(SEEK_TOOL, ensure_ascii=False)
    return prompts.render(
        "tool_dialects/hermes_system", system="You are a helpful video assistant.\n", tools=tools
    )


def _seek_opening(shown: Shown) -> Parts:
    options = bool(str(shown.observation["options"]).strip())
    note = (
        "Answer with the option's letter from the given choices within <answer> </answer> tags.\n"
        if options
        else ""
    )  # time_r1/prompt/v4.py: TEMPLATE_V4_MULTIPLE_CHOICE / TEMPLATE_V4
    text = prompts.render(
        "tool_dialects/timesearch_question",
        max_rounds=shown.preset.max_turns,
        question=question_text(shown.observation),
        answer_note=note,
        duration=str(round(shown.duration, 2)),
    )
    video = shown.video()  # the preview is a video (lazy_dataset.py:L262-270)
    return [video, text] if video is not None else [text]


def _seek_result(shown: Shown) -> Parts:
    if not shown.frames:
        return [f"<tool_response>\n{_result_text(shown)}\n</tool_response>"]
    stamps = ",".join(f"{t:.1f}s" for t in shown.times)  # video_tools.py:L156-161
    frames = _labelled(shown, lambda i, t: f"{t:.1f}s")  # video_tools.py:L28-30
    text = prompts.render("tool_dialects/timesearch_tool_response", timestamps=stamps)
    return ["<tool_response>\n", *frames, text + "\n</tool_response>"]


def _seek_error(shown: Shown) -> Parts:
    return [f"<tool_response>\n{TIMESEARCH_INVALID}\n</tool_response>"]


# -- FrameThinker (examples/agent/infer.py, visual_agent/think_with_video.py) -----------


def _thinker_frames(shown: Shown) -> Parts:
    numbers = frame_numbers(shown.times, shown.info)
    return _labelled(shown, lambda i, t: f"frame {numbers[i]}:")  # infer.py:L270-271


def _thinker_system(shown: Shown) -> str:
    n = 12 if shown.duration > 300 else 8  # infer.py:L231-238
    return prompts.render("tool_dialects/framethinker_system", num_frames=n)


def _thinker_opening(shown: Shown) -> Parts:
    return [f"{question_text(shown.observation)}\n", *_thinker_frames(shown)]  # L245, L268-271


def _thinker_result(shown: Shown) -> Parts:
    return _thinker_frames(shown) if shown.frames else [_result_text(shown)]


def _thinker_error(shown: Shown) -> Parts:
    return [shown.error]  # never reached in the system: an invalid action ends its episode


# -- Video-MTR (vagen/env/video/prompt.py, env.py) -----------------------------------------

_MTR_TYPES = {  # prompt.py: TYPE_TEMPLATE
    "multiple choice": " Please provide only the single option letter (e.g., A, B, C, D, etc.) "
    "within the <answer> </answer> tags.",
    "free-form": " Please provide your text answer within the <answer> </answer> tags. "
    "Conclude your answer in not more than 20 words.",
}


def _mtr_system(shown: Shown) -> str:
    return prompts.render("tool_dialects/videomtr_system", max_turns=shown.preset.max_turns)


def _mtr_ask(shown: Shown, which: str) -> str:
    """The problem, the turn's instruction and the format prompt (prompt.py:L143-193)."""
    lines = str(shown.observation["options"]).strip().splitlines()
    kind = "multiple choice" if lines else "free-form"
    problem = str(shown.observation["question"])
    problem = f"{problem}\nOptions: {lines}" if lines else problem
    last = shown.turns_left <= 1
    action = (
        "You have reached the maximum number of turns. You must provide your final answer now."
        if last
        else "You can choose to retrieve more frames or provide your answer."
    )
    pool = shown.info.get("frame_pool") or ()
    fmt = (
        prompts.render(
            "tool_dialects/videomtr_format_final", answer_type_instruction=_MTR_TYPES[kind]
        )
        if last
        else prompts.render(
            "tool_dialects/videomtr_format",
            answer_type_instruction=_MTR_TYPES[kind],
            max_frame_idx=max(len(pool) - 1, 0),
        )
    )
    return prompts.render(
        "tool_dialects/videomtr_ask", which=which, problem=problem, action_prompt=action,
        format_prompt=fmt,
    )  # fmt: skip


def _mtr_turn(shown: Shown) -> Parts:
    indices = pool_indices(shown.times, shown.info)
    head = prompts.render(
        "tool_dialects/videomtr_turn",
        turn=int(shown.observation["turn"][0]),
        n_frames=len(indices),
        frame_idx_list=indices,
    )
    frames = _labelled(shown, lambda i, t: f"frame_idx:{indices[i]}, ", sep="\n")
    return [head, *frames, _mtr_ask(shown, "")]


def _mtr_error(shown: Shown) -> Parts:
    wrong = (  # env.py:L669, then the invalid-state template (prompt.py:L169-193)
        f"Your response in the previous turn is invalid: {shown.error}Please try again and "
        "response in correct format."
    )
    turn = int(shown.observation["turn"][0])
    head = f"\nTurn {turn}\nNow you have to observe the given frames in the previous turn.\n"
    return [f"{wrong}\n{head}{_mtr_ask(shown, 'previous ')}"]


DIALECTS: Mapping[str, Dialect] = MappingProxyType(
    {
        "longvt": Dialect("longvt", _longvt_system, _longvt_opening, _longvt_result, _longvt_error),
        "videozoomer": Dialect(
            "videozoomer",
            lambda shown: prompts.render("tool_dialects/videozoomer_system"),
            _zoom_opening,
            _zoom_result,
            _zoom_error,
            stop="</video_zoom>",  # vllm_rollout_spmd_video.py:L263
        ),
        "timesearch-r": Dialect(
            "timesearch-r", _seek_system, _seek_opening, _seek_result, _seek_error
        ),
        "framethinker": Dialect(
            "framethinker", _thinker_system, _thinker_opening, _thinker_result, _thinker_error
        ),
        # each turn shows the current frames again; the rollout keeps 2 past turns
        # (scripts/video_ppo/run_7B.sh:L38-39, WINDOW_SIZE=2)
        "video-mtr": Dialect("video-mtr", _mtr_system, _mtr_turn, _mtr_turn, _mtr_error, window=2),
    }
)


def dialect(preset: str) -> Dialect:
    """The dialect of ``preset``.

    Raises:
        UnknownNameError: Listing the dialects.
    """
    if preset not in DIALECTS:
        raise UnknownNameError("tool dialect", preset, list(DIALECTS))
    return DIALECTS[preset]
