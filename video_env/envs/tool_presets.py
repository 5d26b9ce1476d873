"""The Tools env's presets: eight 2025–26 tool-calling systems and the three seed envs.

Each preset is its system's loop as data (:class:`~video_env.envs.tool_rules.ToolPreset`):
its tools under their own names and arguments, frame counts and sizes, units, turns,
history and invalid-call rule, read from the released code (``docs/tools.md`` cites the
file and lines of each number). ``gym.make("VideoEnv/Tools-v1", preset="longvt")``;
fields are overridden one by one (``max_turns=8``).
"""

from __future__ import annotations

from video_env.envs.tool_rules import FrameRule, ToolPreset, ToolSpec
from video_env.errors import ConfigError

_ANSWER_TAG = ToolSpec(
    "answer", "answer", {"answer": "text"}, description="the final answer, in <answer></answer>"
)

LONGVT = ToolPreset(
    name="longvt",
    system="LongVT (EvolvingLMMs-Lab/LongVT, examples/video_tools/mcp_server.py)",
    tools=(
        ToolSpec(
            "crop_video",
            "view",
            {"video_path": "text", "start_time": "start", "end_time": "end"},
            required=("start_time", "end_time"),
            fixed=("video_path",),
            description="the frames of [start_time, end_time] (seconds) at 1 fps",
            frames=FrameRule(
                fps=1.0,
                max_frames=128,
                max_pixels=224 * 224,
                min_pixels=28 * 28,
                even=True,
                sampling="linspace",
            ),
        ),
        _ANSWER_TAG,
    ),
    reply_format="hermes",
    max_turns=5,
    on_invalid="error",
    preview=FrameRule(
        fps=1.0,
        max_frames=512,
        max_pixels=224 * 224,
        min_pixels=28 * 28,
        even=True,
        sampling="linspace",
    ),
)

VIDEOZOOMER = ToolPreset(
    name="videozoomer",
    system="VideoZoomer (zsgvivo/VideoZoomer, verl/workers/rollout/vllm_rollout/function_tools.py)",
    tools=(
        ToolSpec(
            "video_zoom",
            "view",
            {"segment": "spans", "fps": "fps"},
            description='frames of a segment: {"segment": [start, end], "fps": f}, at most 16',
            frames=FrameRule(
                fps=1.0,
                max_frames=16,
                over_max="error",
                max_pixels=100_352,
                min_pixels=25_088,
                resize="scale",
                sampling="linspace",
            ),
        ),
        _ANSWER_TAG,
    ),
    reply_format="video_zoom",
    max_turns=5,
    last_turn_tools=False,
    on_invalid="clamp",
    unparsed_ends=True,
    preview=FrameRule(
        fps=0.5,
        max_frames=64,
        max_pixels=100_352,
        min_pixels=25_088,
        resize="scale",
        sampling="linspace",
    ),
)

TIMESEARCH_R = ToolPreset(
    name="timesearch-r",
    system="TimeSearch-R (Time-Search/TimeSearch-R, time_r1/utils/video_tools.py)",
    tools=(
        ToolSpec(
            "seek_video_frames",
            "search",
            {"query": "query", "start_time": "start", "end_time": "end", "num_frames": "n"},
            required=("query",),
            description="frames of [start_time, end_time] that match query, chosen by a DPP",
            frames=FrameRule(n=8, max_frames=8, max_pixels=256 * 784, min_pixels=32 * 784),
            k=8,
            max_k=8,
            select="dpp",
        ),
        _ANSWER_TAG,
    ),
    reply_format="hermes",
    max_turns=8,
    on_invalid="clamp",
    unparsed_ends=True,
    # a 2 fps video of at most 768 frames in 10,240 visual tokens: ~13 tokens a frame
    preview=FrameRule(
        fps=2.0, max_frames=768, max_pixels=13 * 784 * 2, min_pixels=12 * 784, as_video=True
    ),
    grid_fps=2.0,
    max_candidates=2048,
)

FRAMETHINKER = ToolPreset(
    name="framethinker",
    system="FrameThinker (lcqysl/FrameThinker-RL, visual_agent/think_with_video.py)",
    tools=(
        ToolSpec(
            "choose frames between",
            "view",
            {"start": "start", "end": "end"},
            description="a more detailed view: 8 frames (12 past 300 s) between two frame numbers",
            frames=FrameRule(n=8, max_frames=8, resize="box", box=(640, 360), sampling="linspace"),
            frames_over=(
                300.0,
                FrameRule(n=12, max_frames=12, resize="box", box=(448, 252), sampling="linspace"),
            ),
        ),
        ToolSpec(
            "get frame number at time",
            "locate",
            {"time": "time"},
            description="the frame number at a time MM:SS",
        ),
        _ANSWER_TAG,
    ),
    reply_format="action",
    time_format="mm:ss",
    position="frame",
    max_turns=5,
    on_invalid="end",
    preview=FrameRule(n=8, max_frames=8, resize="box", box=(640, 360), sampling="linspace"),
    preview_over=(
        300.0,
        FrameRule(n=12, max_frames=12, resize="box", box=(448, 252), sampling="linspace"),
    ),
)

VIDEO_MTR = ToolPreset(
    name="video-mtr",
    system="Video-MTR (Xyuan13/Video-MTR, vagen/env/video/)",
    tools=(
        ToolSpec(
            "retrieve",
            "view",
            {"start": "start", "end": "end"},
            description="up to 8 frames between two indices of the frame pool",
            frames=FrameRule(
                n=8, max_frames=8, max_pixels=100_352, min_pixels=100_352, sampling="linspace"
            ),
        ),
        _ANSWER_TAG,
    ),
    reply_format="retrieve",
    position="pool",
    pool=64,
    max_turns=3,
    history="replace",
    on_invalid="error",
    preview=FrameRule(
        n=16, max_frames=16, max_pixels=100_352, min_pixels=100_352, sampling="linspace"
    ),
    messages={
        "bad_argument": "Retrieve range is invalid. start_idx={start}, end_idx={end}, "
        "max_frame_idx={most}. Requirements: 0 <= start_idx <= end_idx <= max_frame_idx",
    },
)

VIDEOSEEK = ToolPreset(
    name="videoseek",
    system="VideoSeek (jylins/videoseek, videoseek/tools/)",
    tools=(
        ToolSpec(
            "overview",
            "overview",
            description="a description of the whole video from 64 frames",
            frames=FrameRule(
                n=64, max_frames=64, resize="short_side", short_side=256, sampling="linspace"
            ),
        ),
        ToolSpec(
            "skim",
            "ask",
            {"query": "query", "start_time": "start", "end_time": "end"},
            description="what 16 frames of [start_time, end_time] (seconds) show about query",
            frames=FrameRule(
                n=16, max_frames=16, resize="short_side", short_side=256, sampling="linspace"
            ),
        ),
        ToolSpec(
            "focus",
            "ask",
            {"query": "query", "start_time": "start", "end_time": "end"},
            description="a close look at a short clip (under 16 s) about query",
            # min(native frames of the span, 16) at native size: 1 fps only for a 16 s clip
            frames=FrameRule(
                n=16,
                max_frames=16,
                max_pixels=8192 * 8192,
                min_pixels=1,
                resize="scale",
                native_fps=True,
                sampling="linspace",
            ),
        ),
        ToolSpec("answer", "answer", {"answer": "text"}, description="the final answer"),
    ),
    reply_format="json",
    max_turns=20,
    on_invalid="error",
)

DVD = ToolPreset(
    name="dvd",
    system="Deep Video Discovery (microsoft/DeepVideoDiscovery, dvd/dvd_core.py)",
    tools=(
        ToolSpec(
            "global_browse_tool",
            "overview",
            {"query": "query"},
            description="a global view of the video's events about query",
            frames=FrameRule(n=32, max_frames=32, resize="box", box=(640, 360)),
        ),
        ToolSpec(
            "clip_search_tool",
            "search",
            {"event_description": "query", "top_k": "k"},
            required=("event_description",),
            description="the captions of the 10 s clips that best match an event",
            k=16,
            max_k=64,
            returns="captions",
        ),
        ToolSpec(
            "frame_inspect_tool",
            "ask",
            {"question": "query", "time_ranges_hhmmss": "spans"},
            description="a vision model's answer to question over frames of the time ranges",
            frames=FrameRule(n=50, max_frames=50, resize="box", box=(640, 360)),
        ),
        ToolSpec("finish", "answer", {"answer": "text"}, description="the final answer"),
    ),
    reply_format="json",
    time_format="hh:mm:ss",
    max_turns=15,
    last_turn_tools=False,
    on_invalid="error",
    index_clip_s=10.0,
    messages={
        "unknown_tool": "Invalid function name: {name!r}",
        "end_past_video": "One of start time {start} exceeds video length {duration}",
        "start_past_video": "One of start time {start} exceeds video length {duration}",
    },
)

LONGVIDSEARCH = ToolPreset(
    name="longvidsearch",
    system="LongVidSearch (yrywill/LongVidSearch, tools.py)",
    tools=(
        ToolSpec(
            "Search_Clips_In_Video",
            "search",
            {"video_id": "text", "query": "query", "top_k": "k"},
            required=("query",),
            fixed=("video_id",),
            description="clip ids and captions of the clips that best match query",
            k=5,
            max_k=32,
            returns="captions",
        ),
        ToolSpec(
            "Get_Clip_Detail",
            "read",
            {"clip_id": "clip"},
            description="a detailed caption of one clip",
            frames=FrameRule(n=8, max_frames=8, max_pixels=448 * 448),
        ),
        ToolSpec(
            "FINAL_ANSWER",
            "answer",
            {"answer_text": "text", "evidence_clip_ids": "clips"},
            required=("answer_text",),
            description="the final answer and the ids of its evidence clips",
        ),
    ),
    reply_format="json",
    max_turns=10,
    on_invalid="error",
    index_clip_s=30.0,
)

FALCONEYE = ToolPreset(
    name="falconeye",
    system="FALCONEye (cplou99/FALCONEye), the Zoom env's actions as tools",
    tools=(
        ToolSpec(
            "evaluate",
            "ask",
            {"start": "start", "end": "end"},
            description="the vision model's answer to the question on [start, end]",
            frames=FrameRule(fps=1.0, min_frames=4, max_frames=64, max_pixels=448 * 448),
        ),
        ToolSpec("answer", "answer", {"answer": "text", "window": "spans"}, required=("answer",)),
    ),
    reply_format="calls",
    max_turns=46,
    index_clip_s=60.0,
    index_shown=True,
)

VIDEOAGENT = ToolPreset(
    name="videoagent",
    system="VideoAgent (wxh1996/VideoAgent), the ClipQuery env's actions as tools",
    tools=(
        ToolSpec(
            "query",
            "search",
            {"start": "start", "end": "end", "description": "query"},
            description="the caption of the frame of [start, end] that best matches description",
            frames=FrameRule(n=1, max_frames=1, max_pixels=448 * 448),
            returns="frame_captions",
        ),
        ToolSpec("answer", "answer", {"answer": "text", "window": "spans"}, required=("answer",)),
    ),
    reply_format="calls",
    max_turns=3,
    preview=FrameRule(n=5, max_frames=5, max_pixels=448 * 448, sampling="linspace"),
    preview_captions=True,
)

VIDEOSCOUT = ToolPreset(
    name="videoscout",
    system="VideoScout, the Pacing env's reading as a tool",
    tools=(
        ToolSpec(
            "view",
            "view",
            {"start": "start", "end": "end"},
            description="the frames of [start, end]: 8, at 448 x 252 at most",
            frames=FrameRule(n=8, max_frames=8, max_pixels=448 * 252),
        ),
        ToolSpec("answer", "answer", {"answer": "text", "window": "spans"}, required=("answer",)),
    ),
    reply_format="calls",
    max_turns=32,
)

#: The presets by name.
PRESETS: dict[str, ToolPreset] = {
    p.name: p
    for p in (
        LONGVT,
        VIDEOZOOMER,
        TIMESEARCH_R,
        FRAMETHINKER,
        VIDEO_MTR,
        VIDEOSEEK,
        DVD,
        LONGVIDSEARCH,
        FALCONEYE,
        VIDEOAGENT,
        VIDEOSCOUT,
    )
}


#: The preset of a Tools env made without one.
DEFAULT_PRESET = "longvt"


def resolve_preset(preset: str | ToolPreset) -> ToolPreset:
    """A preset by name (or the preset given).

    Raises:
        ConfigError: For an unknown name.
    """
    if isinstance(preset, ToolPreset):
        return preset
    if preset not in PRESETS:
        raise ConfigError(f"unknown tools preset {preset!r}; known: {sorted(PRESETS)}")
    return PRESETS[preset]
