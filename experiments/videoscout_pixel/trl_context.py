"""How many Pacing windows a model's context holds: VideoScout's fresh chat vs TRL's growing one.

``python -m experiments.videoscout_pixel.trl_context --model video_env/pixel/vlm_weights
--rules pixel-vlm``
plays the first questions of the pixel-real world's calibration videos forward at one
speed to the end of the video (no model runs: the pacing is fixed) and counts, with the
model's own processor, the prompt tokens the model would be given before each reply:

- **Think-Act** (``video-env train rl``, the paper's form): each turn is a fresh chat
  (system prompt, the window's frames fed as one video, the notes, the question), so the
  prompt stays the size of one window;
- **TRL tools** (``video-env train trl``: ``GRPOTrainer(environment_factory=...)``): the
  chat grows by every tool result, each frame an image (TRL 1.16 carries a tool result's
  frames to the loss only as images), after a system prompt that lists the tools' JSON
  schemas.

TRL drops a tool result that would take the chat past the model's
``max_position_embeddings`` and ends the rollout there, so the last column is how many
windows a TRL rollout can show. Deterministic; a few seconds a question.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from experiments._docs import update_block
from policies.episode_settings import EpisodeSettings
from policies.training.adapter import PacingChatEnv
from policies.training.cli import RULES, split_samples
from policies.training.trl_env import (
    PacingToolEnv,
    tool_chat_processor,
    tool_content,
    tool_dataset_rows,
)
from policies.training.turn_inputs import conversation_from_messages
from video_env._optional import require
from video_env.actions.types import SpeedAction
from video_env.backends.base import VisionMessage
from video_env.backends.hf_generation import encode, prepare_conversations
from video_env.envs.pacing_rules import PacingRules
from video_env.types import VideoQA

__all__ = ["ContextCount", "count_contexts", "format_table", "main"]

BLOCK = "trl-context"


@dataclass(frozen=True)
class ContextCount:
    """One question played forward at one speed.

    Attributes:
        sample_id: The question.
        speed: The speed every window was watched at.
        think_act: Prompt tokens of each Think-Act turn (a fresh chat a window).
        trl: Tokens of TRL's growing chat before each reply (after the reset, then after
            each tool result).
        limit: The model's ``max_position_embeddings``.
    """

    sample_id: str
    speed: int
    think_act: list[int]
    trl: list[int]
    limit: int

    @property
    def trl_windows(self) -> int:
        """Windows a TRL rollout shows before a tool result would pass the limit."""
        return sum(1 for tokens in self.trl if tokens < self.limit)


def count_contexts(
    processor: Any, sample: VideoQA, rules: PacingRules, speed: int, limit: int
) -> ContextCount:
    """Both prompts' tokens before each reply of ``sample`` played at ``speed`` to its end."""
    settings = EpisodeSettings(rules=rules)
    episode = PacingChatEnv(sample, settings)
    tools = PacingToolEnv({}, settings)
    schemas = [tools.speed, tools.rewatch, tools.answer]
    chat = list(tool_dataset_rows([sample], rules)[0]["prompt"])
    first = episode.reset()
    chat[-1] = {
        "role": "user",
        "content": [{"type": "text", "text": chat[-1]["content"]}, *tool_content(first)],
    }
    messages: list[VisionMessage] | None = first
    think_act, trl = [], []
    while messages is not None:
        think_act.append(_think_act_tokens(processor, messages))
        trl.append(_chat_tokens(processor, chat, schemas))
        step = episode.step_action(SpeedAction(speed, "Notes."))
        messages = step.messages
        if messages is not None:
            call = {"name": "speed", "arguments": {"factor": speed, "notes": "Notes."}}
            chat += [
                {"role": "assistant", "content": "Skim.", "tool_calls": [{"function": call}]},
                {"role": "tool", "name": "speed", "content": tool_content(messages)},
            ]
    episode.close()
    return ContextCount(sample.id, speed, think_act, trl, limit)


def _think_act_tokens(processor: Any, messages: list[VisionMessage]) -> int:
    texts, images, videos, metas, _ = prepare_conversations(
        processor, [conversation_from_messages(messages)]
    )
    return int(encode(processor, texts, images, videos, metas)["input_ids"].shape[1])


def _chat_tokens(processor: Any, chat: list[dict[str, Any]], schemas: list[Any]) -> int:
    encoded = processor.apply_chat_template(
        chat, tools=schemas, tokenize=True, return_dict=True, add_generation_prompt=True
    )
    return len(encoded["input_ids"][0])


def format_table(counts: Sequence[ContextCount]) -> list[str]:
    """One row per speed: windows, the largest Think-Act prompt, TRL's chat per window."""
    limit = counts[0].limit
    longest = max(len(c.trl) for c in counts)
    shown = min(longest, 4)
    head = ["speed", "windows to the end", "Think-Act prompt (largest)"]
    head += [f"TRL chat before reply {i + 1}" for i in range(shown)]
    head += [f"windows TRL shows (limit {limit:,})"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for speed in dict.fromkeys(c.speed for c in counts):
        mine = [c for c in counts if c.speed == speed]
        cells = [
            f"{speed}x",
            _span([len(c.think_act) for c in mine]),
            _span([max(c.think_act) for c in mine]),
        ]
        for i in range(shown):
            cells.append(_span([c.trl[i] for c in mine if len(c.trl) > i]) or "—")
        cells.append(_span([c.trl_windows for c in mine]))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _span(values: Sequence[int]) -> str:
    if not values:
        return ""
    low, high = min(values), max(values)
    return f"{low:,}" if low == high else f"{low:,}–{high:,}"


def main(argv: Sequence[str] | None = None) -> int:
    """Count, print the table and (with ``--block``) write it where its block is (the LOG)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="video_env/pixel/vlm_weights")
    parser.add_argument("--rules", default="pixel-vlm", choices=sorted(RULES))
    parser.add_argument("--split", default="calib")
    parser.add_argument("--videos", type=int, default=2)
    parser.add_argument("--questions", type=int, default=4, help="the first N questions")
    parser.add_argument("--speeds", default="1,2,4", help="comma-separated speeds")
    parser.add_argument("--block", action="store_true", help=f"write the {BLOCK} block")
    args = parser.parse_args(argv)
    transformers = require("transformers", "models", "the TRL context study")
    start = time.monotonic()
    processor = tool_chat_processor(
        transformers.AutoProcessor.from_pretrained(args.model, local_files_only=True)
    )
    config = transformers.AutoConfig.from_pretrained(args.model, local_files_only=True)
    limit = int(getattr(config, "text_config", config).max_position_embeddings)
    rules = RULES[args.rules]()
    samples = split_samples(args.split, args.videos)[: args.questions]
    counts = [
        count_contexts(processor, sample, rules, int(speed), limit)
        for speed in args.speeds.split(",")
        for sample in samples
    ]
    lines = format_table(counts)
    command = (
        f"python -m experiments.videoscout_pixel.trl_context --model {args.model} "
        f"--rules {args.rules} "
        f"--split {args.split} --videos {args.videos} --questions {args.questions} "
        f"--speeds {args.speeds}"
    )
    intro = (
        f"Generated by `{command}` ({len(samples)} questions, each played forward at one "
        f"speed to the end of its video, {time.monotonic() - start:.0f} s on this machine): "
        "prompt tokens before each reply, counted with the model's processor; a range "
        "spans the questions."
    )
    print(intro, *lines, sep="\n")
    if args.block:
        update_block(f"<!-- {BLOCK} -->", f"<!-- /{BLOCK} -->", "\n".join([intro, "", *lines, ""]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
