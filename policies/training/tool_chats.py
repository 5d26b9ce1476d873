"""Teacher episodes as TRL tool-calling chats: the SFT data of the ``train trl`` route.

``train trl`` plays the Pacing env as TRL's growing tool-calling chat
(:mod:`policies.training.trl_env`), and a model that has only learned VideoScout's
Think-Act replies never calls a tool there (``docs/training.md``: every reward 0, no
signal). This module rewrites a ``train distill`` run's kept episodes in that format, so
an SFT can teach the tool calls first:

- each episode is replayed through :class:`~policies.training.trl_env.PacingToolEnv`, the
  same class TRL's rollouts call, so every tool result (the next window's frames as
  images, with its text) is exactly what a rollout shows; the replay's reward must equal
  the distilled one, or the episode is reported and left out;
- each Think-Act reply becomes an assistant turn: the thought as its text and one tool
  call, the notes (the memory) as the call's ``notes`` argument;
- after the answer's tool result a last assistant turn without a tool call ends the chat,
  as a rollout ends.

A chat row holds ``messages`` (system, user, then assistant / tool turns) with each image
a file under ``images/`` next to ``tool_chats.jsonl``. :class:`ToolChatCollator` renders
rows with TRL's Qwen3-VL training template (Qwen2.5's tool format, with generation
marks), the tools' schemas from the env's methods (as ``GRPOTrainer`` derives them), and
the loss on the assistant turns only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policies.episode_settings import EpisodeSettings
from policies.training.distill import read_rows
from policies.training.trl_env import PacingToolEnv, tool_dataset_rows
from policies.videoscout.record import save_trained_rules
from policies.videoscout.tool_calls import tool_methods
from video_env._optional import require
from video_env.actions.pacing import PacingActionSet, split_think_act
from video_env.actions.types import AnswerAction, RewatchAction, SpeedAction
from video_env.errors import ConfigError, InvalidActionError
from video_env.types import VideoQA

__all__ = [
    "CHATS_FILE",
    "CLOSING_REPLY",
    "ToolChatCollator",
    "ToolChatsResult",
    "chat_positions",
    "is_tool_chats",
    "load_tool_chats",
    "max_positions",
    "tool_call",
    "tool_chat",
    "tool_methods",
    "write_tool_chats",
]

_PURPOSE = "tool-calling SFT data for TRL"
CHATS_FILE = "tool_chats.jsonl"
#: The assistant's last turn, after the answer's tool result: a reply without a tool call.
CLOSING_REPLY = "Done."
_REWARD_TOLERANCE = 1e-6


def tool_call(action: SpeedAction | RewatchAction | AnswerAction) -> dict[str, Any]:
    """A Pacing action as the tool call ``PacingToolEnv`` answers (notes included).

    Raises:
        ConfigError: If an answer has no evidence window (the ``answer`` tool needs one).
    """
    notes = action.memory or ""
    if isinstance(action, SpeedAction):
        name, arguments = "speed", {"factor": action.factor, "notes": notes}
    elif isinstance(action, RewatchAction):
        name, arguments = "rewatch", {"chunk": action.chunk, "notes": notes}
    else:
        if action.window is None:
            raise ConfigError("an answer without a window has no `answer` tool call")
        arguments = {
            "answer": action.text,
            "start": action.window.start,
            "end": action.window.end,
            "notes": notes,
        }
        name = "answer"
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def tool_chat(
    sample: VideoQA,
    replies: Sequence[str],
    settings: EpisodeSettings | None = None,
    *,
    seed: int = 0,
) -> tuple[list[dict[str, Any]], float]:
    """Replay ``replies`` (Think-Act) on ``sample`` as TRL's tool chat.

    Returns:
        The chat's messages (images as PIL images) and the episode's reward as
        ``PacingToolEnv.get_reward`` gives it.

    Raises:
        ConfigError: If a reply is not a Think-Act reply with one valid action, or the
            episode does not end with the last reply (the replay left the distilled one).
    """
    parser = PacingActionSet()
    settings = settings or EpisodeSettings()
    env = PacingToolEnv({sample.id: sample}, settings, seed=seed)
    prompt = tool_dataset_rows([sample], settings.rules)[0]["prompt"]
    first = env.reset(sample_id=sample.id)
    task = prompt[-1]["content"]
    messages = [*prompt[:-1], {"role": "user", "content": [{"type": "text", "text": task}, *first]}]
    for turn, reply in enumerate(replies, 1):
        parts = split_think_act(reply)
        if parts is None:
            raise ConfigError(f"{sample.id} turn {turn}: no Think-Act reply")
        try:
            call = tool_call(parser.parse(reply, strict=True))
        except InvalidActionError as exc:
            raise ConfigError(f"{sample.id} turn {turn}: {exc}") from exc
        function = call["function"]
        result = getattr(env, function["name"])(**function["arguments"])  # raises if over
        thought = (parts.think or "").strip()
        messages.append({"role": "assistant", "content": thought, "tool_calls": [call]})
        content = result if isinstance(result, list) else str(result)  # as TRL keeps it
        messages.append({"role": "tool", "name": function["name"], "content": content})
    if env.episode is None or not env.episode.done:
        raise ConfigError(f"{sample.id}: the episode did not end with its last reply")
    messages.append({"role": "assistant", "content": CLOSING_REPLY})
    return messages, env.get_reward()


@dataclass
class ToolChatsResult:
    """What :func:`write_tool_chats` wrote.

    Attributes:
        path: The ``tool_chats.jsonl`` file.
        chats: Chats written.
        images: Image files written.
        skipped: ``sample_id → why`` for each episode left out.
    """

    path: Path
    chats: int = 0
    images: int = 0
    skipped: dict[str, str] = field(default_factory=dict)


def write_tool_chats(
    trajectories: str | Path,
    samples: Sequence[VideoQA],
    out: str | Path,
    settings: EpisodeSettings | None = None,
    *,
    seed: int = 0,
) -> ToolChatsResult:
    """Write each episode of ``trajectories`` (``train distill``'s) as a tool chat.

    Pass ``samples`` as the teacher played them, without the reference chunks its
    episodes set: the replay's reward must be the distilled one. An episode whose question
    is not among ``samples``, whose replies do not replay, or whose replayed reward
    differs from the distilled one is left out and reported. The rules and layout are
    recorded in ``out`` (``videoscout.json``), where ``train sft`` and the checkpoint after
    it read them.
    """
    if not Path(trajectories).is_file():
        raise ConfigError(f"no trajectories file at {trajectories}")
    settings = settings or EpisodeSettings()
    by_id = {sample.id: sample for sample in samples}
    folder = Path(out)
    (folder / "images").mkdir(parents=True, exist_ok=True)
    result = ToolChatsResult(folder / CHATS_FILE)
    with result.path.open("w", encoding="utf-8") as sink:
        for row in read_rows(Path(trajectories)):
            sample_id = str(row["sample_id"])
            if sample_id not in by_id:
                result.skipped[sample_id] = "not among the given questions"
                continue
            try:
                messages, reward = tool_chat(by_id[sample_id], row["replies"], settings, seed=seed)
            except ConfigError as exc:
                result.skipped[sample_id] = str(exc)
                continue
            if abs(reward - float(row["reward"])) > _REWARD_TOLERANCE:
                distilled = float(row["reward"])
                result.skipped[sample_id] = f"replayed reward {reward:.3f}, not {distilled:.3f}"
                continue
            stem = f"{result.chats:05d}"
            result.images += _save_images(messages, folder, stem)
            record = {"sample_id": sample_id, "reward": reward, "messages": messages}
            sink.write(json.dumps(record) + "\n")
            result.chats += 1
    save_trained_rules(folder, settings.rules, **settings.layout.policy_kwargs())
    return result


def _save_images(messages: list[dict[str, Any]], folder: Path, stem: str) -> int:
    """Save each image part to ``images/`` and put its relative path in its place."""
    saved = 0
    for message in messages:
        content = message["content"]
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "image":
                name = f"images/{stem}-{saved:03d}.png"
                part["image"].save(folder / name)
                part["image"] = name
                saved += 1
    return saved


def is_tool_chats(path: str | Path) -> bool:
    """Whether ``path`` is a :func:`write_tool_chats` file (its rows hold ``messages``)."""
    with Path(path).open(encoding="utf-8") as source:
        first = source.readline()
    return bool(first.strip()) and "messages" in json.loads(first)


def load_tool_chats(path: str | Path) -> Any:
    """``tool_chats.jsonl`` as a ``datasets.Dataset`` of JSON rows (``chat``, ``folder``).

    Each chat is kept as one JSON string: its messages mix text and image parts and tool
    calls with different arguments, which Arrow would force into one schema.
    """
    datasets = require("datasets", "train", _PURPOSE)
    folder = str(Path(path).resolve().parent)
    rows = [{"chat": json.dumps(row), "folder": folder} for row in read_rows(Path(path))]
    if not rows:
        raise ConfigError(f"{path} holds no chats")
    return datasets.Dataset.from_list(rows)


class ToolChatCollator:
    """``SFTTrainer``'s ``data_collator`` for tool chats: the loss on the assistant turns.

    Args:
        processor: The model's processor.
        tools: The tools as ``GRPOTrainer`` passes them (the env's bound methods); their
            schemas go into the system turn.
        max_length: Positions a chat may take (the model's ``max_position_embeddings``);
            a longer chat raises rather than being cut (a rollout would not show its end).
    """

    def __init__(self, processor: Any, tools: Sequence[Any], max_length: int | None = None):
        trl_templates = require("trl.chat_template_utils", "train", _PURPOSE)
        self.processor = processor
        self.tools = list(tools)
        self.max_length = max_length
        self.template = trl_templates.qwen3_vl_training_chat_template

    def encode(self, rows: list[dict[str, Any]]) -> Any:
        """The rows rendered and tokenized (frames included), with their assistant masks."""
        image = require("PIL.Image", "train", _PURPOSE)
        chats = []
        for row in rows:
            record = json.loads(row["chat"])
            chats.append(_with_images(record["messages"], Path(row["folder"]), image))
        return self.processor.apply_chat_template(
            chats,
            tools=self.tools,
            chat_template=self.template,
            tokenize=True,
            return_dict=True,
            return_tensors="pt",
            return_assistant_tokens_mask=True,
            processor_kwargs={"padding": True, "padding_side": "right"},
        )

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """Collate a batch of :func:`load_tool_chats` rows."""
        batch = self.encode(rows)
        width = int(batch["input_ids"].shape[1])
        if self.max_length is not None and width > self.max_length:
            raise ConfigError(
                f"a tool chat of {width} positions passes the model's {self.max_length}: "
                "fewer frames per window (the rules) or a model with a longer context"
            )
        labels = batch["input_ids"].clone()
        labels[batch["attention_mask"] == 0] = -100
        labels[batch.pop("assistant_masks") == 0] = -100
        batch["labels"] = labels
        return dict(batch)


def chat_positions(path: str | Path, processor: Any) -> list[int]:
    """Positions each chat of ``path`` takes for ``processor``'s model (frames included).

    What a model's ``max_position_embeddings`` must hold for SFT on the chat and for a
    TRL rollout as long as the teacher's episode.
    """
    collator = ToolChatCollator(processor, tool_methods())
    return [int(collator.encode([row])["input_ids"].shape[1]) for row in load_tool_chats(path)]


def _with_images(messages: list[dict[str, Any]], folder: Path, image: Any) -> list[Any]:
    """``messages`` with each image path opened (relative to the chats' folder)."""
    opened = []
    for message in messages:
        content = message["content"]
        if isinstance(content, list):
            content = [
                {**part, "image": image.open(folder / part["image"]).convert("RGB")}
                if part.get("type") == "image"
                else part
                for part in content
            ]
        opened.append({**message, "content": content})
    return opened


def max_positions(config: Any) -> int | None:
    """A model config's context in positions (its text config's, for a VLM)."""
    return getattr(getattr(config, "text_config", config), "max_position_embeddings", None)
