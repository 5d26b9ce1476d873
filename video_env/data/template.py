"""A commented JSONL template for a folder of the user's own videos.

``video-env data template DIR`` writes ``DIR/qa.jsonl``: ``#`` lines saying what each field
means, then one example question per video file (its duration read from the file), which
loads and runs as it is (``--dataset jsonl --annotations DIR/qa.jsonl``) until the user
writes real questions over it.
"""

from __future__ import annotations

import json
from pathlib import Path

from video_env.data.jsonl import NAME
from video_env.errors import ConfigError
from video_env.video.open import open_video

#: File name suffixes taken for videos.
VIDEO_SUFFIXES = (".mp4", ".mkv", ".webm", ".mov", ".avi", ".m4v")
#: The template's default file name, inside the video folder.
TEMPLATE_NAME = "qa.jsonl"

#: What each field means (the template's comment lines; docs/benchmarks.md says the same).
FIELD_GUIDE = """\
video-env dataset (JSON Lines): one question per line; lines starting with # are comments.
Load it:  video-env bench --dataset jsonl --annotations THIS_FILE --out runs/mine
Fields of a record:
  id            text, unique in the file
  video         path of the video file, relative to this file's folder (or to --videos)
  question      the question, without its options
  options       MCQ: the option texts, without letters ("A." is added); open question: null
  answer        MCQ: the correct option's letter ("A", "B", ...); open: the answer text (not blank);
                null when unknown (the sample is then left out of accuracy)
  gt_intervals  evidence windows [[start, end], ...] in seconds from the video's start
                ([] when unknown: no GToU, and simulated sensors never find it); one that
                starts over 1 s after the file's end fails its episode
  duration      the video's length in seconds, or null (read from the file)
  category      optional label, e.g. "object" (per-category tables)
  source        optional name of where the question comes from
  meta          optional object kept with the sample, e.g. {"splits": ["test"]}
The records below are examples over your files: replace their questions and answers."""


def video_files(folder: Path) -> list[Path]:
    """The video files directly inside ``folder``, sorted by name."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in VIDEO_SUFFIXES)


def template_records(folder: Path) -> list[dict[str, object]]:
    """One example MCQ per video of ``folder`` (and an open question on the first).

    Raises:
        ConfigError: If the folder holds no video file.
        VideoDecodeError: If a video cannot be decoded (its duration is read).
    """
    videos = video_files(folder)
    if not videos:
        raise ConfigError(f"no video file ({', '.join(VIDEO_SUFFIXES)}) in {str(folder)!r}")
    records: list[dict[str, object]] = []
    for i, path in enumerate(videos):
        with open_video(path) as reader:
            duration = round(float(reader.duration), 3)
        middle = round(duration / 2, 3)
        records.append({
            "id": f"{path.stem}-q1",
            "video": path.name,
            "question": f"EDIT ME: what happens in {path.name} at {middle:g} s?",
            "options": ["EDIT ME: the right answer", "a wrong answer", "another wrong answer"],
            "answer": "A",
            "gt_intervals": [[round(max(0.0, middle - 1), 3), round(min(duration, middle + 1), 3)]],
            "duration": duration,
            "category": "example",
            "source": NAME,
        })  # fmt: skip
        if i == 0:
            records.append({
                "id": f"{path.stem}-q2",
                "video": path.name,
                "question": f"EDIT ME: an open question about {path.name}",
                "options": None,
                "answer": "EDIT ME: the answer text",
                "gt_intervals": [[0.0, round(min(duration, 2.0), 3)]],
                "duration": duration,
                "category": "example",
                "source": NAME,
            })  # fmt: skip
    return records


def write_template(folder: str | Path, out: str | Path | None = None, force: bool = False) -> Path:
    """Write the commented template for the videos of ``folder``.

    Args:
        folder: The folder of video files.
        out: The file to write (default: ``folder/qa.jsonl``); relative video paths in it
            are relative to ``folder``, so load it with ``--videos folder`` when it lies
            elsewhere.
        force: Overwrite an existing file.

    Returns:
        The path written.

    Raises:
        ConfigError: If ``folder`` is not a folder, holds no video, or ``out`` exists
            (without ``force``).
    """
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(f"not a folder: {str(root)!r}")
    target = Path(out) if out is not None else root / TEMPLATE_NAME
    if target.exists() and not force:
        raise ConfigError(f"{str(target)!r} exists: edit it, or pass --force to overwrite it")
    records = template_records(root)
    comments = "".join(f"# {line}".rstrip() + "\n" for line in FIELD_GUIDE.splitlines())
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(comments + lines, encoding="utf-8")
    return target
