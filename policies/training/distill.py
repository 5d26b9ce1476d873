"""Teacher distillation: verified VideoScout trajectories → a turn-level SFT dataset.

For each question the teacher (any :class:`~video_env.backends.base.VisionChat`) plays the
Pacing env with the VideoScout system prompt and no ground truth; an episode is kept only
if it answers correctly and passes validation (:func:`validate`), else the question is
tried again, up to ``tries`` times, and dropped after that (rejection sampling).

Output folder:

- ``turns.jsonl``: one row per turn of the kept episodes, in TRL's conversational
  prompt-completion format with images — ``prompt`` (system message, user message whose
  content has one ``{"type": "image"}`` per frame between the window text and the
  question), ``completion`` (the assistant's reply) and ``images`` (absolute paths of PNG
  files holding the exact frames shown, in order); plus ``frame_times``, ``id``,
  ``sample_id``, ``turn``. ``datasets.load_dataset("json", ...)`` loads it and TRL's
  ``SFTTrainer`` trains on it as is.
- ``images/``: the PNG frames (lossless).
- ``trajectories.jsonl``: one row per kept question: the teacher's answer, window,
  reward and its parts, turns, tries, and ``reference_chunk`` — the chunks the teacher had
  passed when answering, the T of the timing reward (:func:`with_reference_chunks`);
  ``null`` where the teacher said it guessed (a teacher whose ``blind`` attribute is true
  after the kept episode), since its answer turn then marks no evidence.
- ``questions.jsonl``: every finished question (kept or dropped, tries, reasons). A run
  resumes after the last finished question; rows of an unfinished one are discarded.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from policies.episode_settings import EpisodeSettings
from policies.training.distill_checks import validate
from policies.training.episodes import EpisodeRun, Turn, run_recorded_episode
from policies.videoscout.record import (
    RULES_FILE,
    save_trained_rules,
    trained_end_note,
    trained_question_first,
    trained_rules,
)
from video_env._seeding import stable_seed
from video_env.backends.base import FrameBatch, VisionChat, VisionMessage
from video_env.errors import ConfigError
from video_env.types import VideoQA

__all__ = [
    "DistillConfig",
    "DistillStats",
    "distill",
    "load_reference_chunks",
    "read_rows",
    "turn_row",
    "validate",
    "with_reference_chunks",
]


@dataclass(frozen=True)
class DistillConfig:
    """Settings of a distillation run.

    Attributes:
        tries: Episodes per question at most (rejection sampling; 8 in VideoScout's recipe).
        seed: Seed of the env resets.
        episode: How the teacher's episodes are played: its rules and prompt layout (the
            student is trained on both), turn cap, generation budget and temperature (tries
            differ only above 0).
    """

    tries: int = 8
    seed: int = 0
    episode: EpisodeSettings = field(
        default_factory=lambda: EpisodeSettings(max_turns=64, max_new_tokens=1024, temperature=0.7)
    )

    def with_episode(self, **changes: Any) -> DistillConfig:
        """These settings with ``changes`` to the episode's (:class:`EpisodeSettings`)."""
        return replace(self, episode=self.episode.replace(**changes))


@dataclass
class DistillStats:
    """What a run did (printed at the end, also kept in ``stats.json``)."""

    questions: int = 0
    kept: int = 0
    guessed: int = 0
    dropped: int = 0
    resumed: int = 0
    episodes: int = 0
    turns: int = 0
    tries_of_kept: Counter[int] = field(default_factory=Counter)
    rejections: Counter[str] = field(default_factory=Counter)
    rewards: list[float] = field(default_factory=list)

    def summary(self) -> str:
        """A few lines for the terminal."""
        mean = sum(self.rewards) / len(self.rewards) if self.rewards else 0.0
        tries = ", ".join(f"{k}: {v}" for k, v in sorted(self.tries_of_kept.items()))
        why = ", ".join(f"{k}: {v}" for k, v in self.rejections.most_common()) or "none"
        return (
            f"questions {self.questions} (resumed {self.resumed}): kept {self.kept}, "
            f"dropped {self.dropped}; {self.episodes} teacher episodes, {self.turns} turns "
            f"kept; mean reward of kept {mean:.3f}\n"
            + (f"kept by a right guess (blind): {self.guessed}\n" if self.guessed else "")
            + f"tries per kept question: {tries or '-'}\nrejected episodes by reason: {why}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "questions": self.questions,
            "kept": self.kept,
            "guessed": self.guessed,
            "dropped": self.dropped,
            "resumed": self.resumed,
            "episodes": self.episodes,
            "turns": self.turns,
            "tries_of_kept": dict(self.tries_of_kept),
            "rejections": dict(self.rejections),
            "mean_reward_kept": sum(self.rewards) / len(self.rewards) if self.rewards else 0.0,
        }


def turn_row(turn: Turn, images: Sequence[str], row_id: str) -> dict[str, Any]:
    """One SFT row: TRL's conversational prompt-completion format, frames as image parts."""
    prompt: list[dict[str, Any]] = []
    times: list[float] = []
    for message in turn.messages:
        prompt.append({"role": message["role"], "content": _content(message, times)})
    if len(times) != len(images):
        raise ValueError(f"{row_id}: {len(times)} frames but {len(images)} image files")
    return {
        "id": row_id,
        "prompt": prompt,
        "completion": [{"role": "assistant", "content": turn.reply}],
        "images": list(images),
        "frame_times": times,
    }


def _content(message: VisionMessage, times: list[float]) -> str | list[dict[str, str]]:
    content = message.get("content", "")
    if isinstance(content, str):
        return content
    parts: list[dict[str, str]] = []
    for part in content:
        if isinstance(part, FrameBatch):
            times.extend(float(t) for t in part.times)
            parts.extend({"type": "image"} for _ in part.times)
        else:
            parts.append({"type": "text", "text": str(part)})
    return parts


def _frames(turn: Turn) -> np.ndarray[Any, np.dtype[np.uint8]]:
    batches = [
        p
        for m in turn.messages
        if not isinstance(m.get("content", ""), str)
        for p in m["content"]
        if isinstance(p, FrameBatch)
    ]
    if not batches:
        return np.zeros((0, 1, 1, 3), dtype=np.uint8)
    return np.concatenate([np.asarray(b.pixels(), dtype=np.uint8) for b in batches])


def _save_frames(turn: Turn, folder: Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, frame in enumerate(_frames(turn)):
        path = folder / f"f{i:02d}.png"
        Image.fromarray(frame).save(path)
        paths.append(str(path.resolve()))
    return paths


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def _append(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with path.open("a", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a partial last line (a killed run) is dropped."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return rows


def _resume(out: Path) -> set[str]:
    """Sample ids already finished; rows of unfinished questions are discarded."""
    done = {str(r["sample_id"]) for r in read_rows(out / "questions.jsonl")}
    for name in ("questions.jsonl", "turns.jsonl", "trajectories.jsonl"):
        path = out / name
        rows = [r for r in read_rows(path) if str(r.get("sample_id")) in done]
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
        tmp.replace(path)
    return done


def distill(
    teacher: VisionChat,
    samples: Sequence[VideoQA],
    out: str | Path,
    config: DistillConfig | None = None,
    *,
    log: Callable[[str], None] | None = None,
) -> DistillStats:
    """Distil verified teacher trajectories of ``samples`` into ``out`` (resumable).

    A teacher with a ``begin_question(sample, attempt)`` method is told each question
    before its episodes (the scripted teachers have one); one whose ``blind`` attribute
    is true after an episode guessed its answer (no reference chunk is recorded).

    Returns:
        The run's statistics (also written to ``out/stats.json``).
    """
    cfg = config or DistillConfig()
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    episode = cfg.episode
    rules, layout = episode.rules, episode.layout
    recorded = trained_rules(folder)
    if recorded is not None and recorded != rules and (folder / "questions.jsonl").exists():
        raise ConfigError(
            f"{folder} holds turns made under other pacing rules ({RULES_FILE}); "
            "resume with the same rules or write to a new folder"
        )
    resuming = recorded is not None and (folder / "questions.jsonl").exists()
    note = trained_end_note(folder) if resuming else layout.end_note
    if note is not None and note != layout.end_note:
        raise ConfigError(
            f"{folder} holds turns whose prompt placed the end note {note!r} ({RULES_FILE}); "
            "resume with the same --end-note or write to a new folder"
        )
    first = trained_question_first(folder) if resuming else layout.question_first
    if bool(first) != layout.question_first:
        raise ConfigError(
            f"{folder} holds turns whose prompt put the question "
            f"{'before' if first else 'after'} the frames ({RULES_FILE}); resume with the "
            "same --question-first setting or write to a new folder"
        )
    # a folder whose record names no place (made before the setting) keeps naming none
    save_trained_rules(folder, rules, end_note=note, question_first=first)
    done = _resume(folder)
    stats = DistillStats(resumed=len(done))
    begin = getattr(teacher, "begin_question", None)
    for sample in samples:
        stats.questions += 1
        if sample.id in done:
            continue
        kept: EpisodeRun | None = None
        reasons: list[list[str]] = []
        for attempt in range(cfg.tries):
            if callable(begin):
                begin(sample, attempt)
            seed = stable_seed(cfg.seed, sample.id, attempt) % 2**31
            run = run_recorded_episode(teacher, sample, episode, seed=seed)
            stats.episodes += 1
            why = validate(run, sample)
            reasons.append(why)
            stats.rejections.update(why)
            if not why:
                kept = run
                break
        guessed = kept is not None and bool(getattr(teacher, "blind", False))
        _finish(folder, sample, kept, reasons, stats, guessed=guessed)
        if log is not None:
            log(f"{sample.id}: {'kept' if kept else 'dropped'} after {len(reasons)} tries")
    (folder / "stats.json").write_text(json.dumps(stats.to_dict(), indent=2), "utf-8")
    return stats


def _finish(
    folder: Path,
    sample: VideoQA,
    kept: EpisodeRun | None,
    reasons: list[list[str]],
    stats: DistillStats,
    *,
    guessed: bool = False,
) -> None:
    if kept is not None:
        stem = _safe(sample.id)
        rows = []
        for i, turn in enumerate(kept.turns, start=1):
            images = _save_frames(turn, folder / "images" / stem / f"t{i:03d}")
            row = turn_row(turn, images, f"{sample.id}#t{i}")
            rows.append({**row, "sample_id": sample.id, "turn": i})
        _append(folder / "turns.jsonl", rows)
        record = kept.record
        trajectory = _trajectory(sample, kept, len(reasons))
        if guessed:
            trajectory["reference_chunk"] = None
            stats.guessed += 1
        _append(folder / "trajectories.jsonl", [trajectory])
        stats.kept += 1
        stats.turns += len(rows)
        stats.tries_of_kept[len(reasons)] += 1
        stats.rewards.append(float(record.get("reward") or 0.0))
    else:
        stats.dropped += 1
    status = {"sample_id": sample.id, "kept": kept is not None, "tries": len(reasons)}
    _append(folder / "questions.jsonl", [{**status, "rejections": reasons}])


def _trajectory(sample: VideoQA, run: EpisodeRun, tries: int) -> dict[str, Any]:
    record = run.record
    return {
        "sample_id": sample.id,
        "question": sample.question,
        "answer": record.get("answer"),
        "window": record.get("window"),
        "reward": record.get("reward"),
        "reward_parts": record.get("reward_parts"),
        "turns": len(run.turns),
        "tries": tries,
        "reference_chunk": run.turns[-1].chunks_passed if run.turns else 0,
        "replies": [t.reply for t in run.turns],
    }


def load_reference_chunks(path: str | Path) -> dict[str, int]:
    """``sample_id → reference_chunk`` from a ``trajectories.jsonl`` (guessed ones left out)."""
    rows = read_rows(Path(path))
    return {
        str(r["sample_id"]): int(r["reference_chunk"])
        for r in rows
        if r.get("reference_chunk") is not None
    }


def with_reference_chunks(samples: Iterable[VideoQA], chunks: dict[str, int]) -> list[VideoQA]:
    """``samples`` with ``meta["reference_chunk"]`` set where the teacher answered them."""
    return [
        replace(s, meta={**s.meta, "reference_chunk": chunks[s.id]}) if s.id in chunks else s
        for s in samples
    ]
