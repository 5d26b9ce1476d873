"""A commented JSONL template for a folder of the user's own videos.

``video-env data template DIR`` writes ``DIR/qa.jsonl``: ``#`` lines saying what each field
means, then one example question per video file (its duration read from the file), which
loads and runs as it is (``--dataset jsonl --annotations DIR/qa.jsonl``) until the user
writes real questions over it. A file that does not decode (a text file named ``.mp4``, a
truncated download, frames over the size cap) is left out and listed, in the result and
as a comment line of the template; the other files are written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from video_env.data.jsonl import NAME
from video_env.errors import ConfigError, VideoDecodeError
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


@dataclass(frozen=True)
class SkippedVideo:
    """A file of the folder left out of the template because it does not decode.

    Attributes:
        name: The file's name inside the folder.
        reason: What the decoder said.
    """

    name: str
    reason: str

    def __str__(self) -> str:
        """``'name.mp4': reason``, on one line whatever the name and the reason hold."""
        return f"{self.name!r}: {' '.join(self.reason.split())}"


@dataclass(frozen=True)
class Template:
    """The records of a folder's template and the files left out.

    Attributes:
        records: One example MCQ per decodable video (and an open question on the first).
        skipped: The files that do not decode, in name order.
    """

    records: tuple[dict[str, object], ...]
    skipped: tuple[SkippedVideo, ...]


@dataclass(frozen=True)
class WrittenTemplate:
    """What :func:`write_template` wrote.

    Attributes:
        path: The template file.
        videos: How many videos it has questions about.
        skipped: The files left out because they do not decode.
    """

    path: Path
    videos: int
    skipped: tuple[SkippedVideo, ...]


def _duration(path: Path) -> float | str:
    """The video's duration in seconds, or why it does not decode."""
    try:
        with open_video(path) as reader:
            return round(float(reader.duration), 3)
    except VideoDecodeError as exc:
        return exc.reason


def template_records(folder: Path) -> Template:
    """One example MCQ per decodable video of ``folder`` (and an open question on the first).

    Raises:
        ConfigError: If the folder holds no video file, or none of them decodes.
    """
    videos = video_files(folder)
    if not videos:
        raise ConfigError(f"no video file ({', '.join(VIDEO_SUFFIXES)}) in {str(folder)!r}")
    records: list[dict[str, object]] = []
    skipped: list[SkippedVideo] = []
    for path in videos:
        duration = _duration(path)
        if isinstance(duration, str):
            skipped.append(SkippedVideo(path.name, duration))
            continue
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
        if len(records) == 1:
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
    if not records:
        shown = "; ".join(str(s) for s in skipped[:3])
        raise ConfigError(f"no video file in {str(folder)!r} decodes ({shown})")
    return Template(tuple(records), tuple(skipped))


def write_template(
    folder: str | Path, out: str | Path | None = None, force: bool = False
) -> WrittenTemplate:
    """Write the commented template for the videos of ``folder`` that decode.

    Args:
        folder: The folder of video files.
        out: The file to write (default: ``folder/qa.jsonl``); relative video paths in it
            are relative to ``folder``, so load it with ``--videos folder`` when it lies
            elsewhere.
        force: Overwrite an existing file.

    Returns:
        The path written, and the files left out because they do not decode (also listed
        in the template's last comment lines).

    Raises:
        ConfigError: If ``folder`` is not a folder, holds no video that decodes, or
            ``out`` exists (without ``force``).
    """
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(f"not a folder: {str(root)!r}")
    target = Path(out) if out is not None else root / TEMPLATE_NAME
    if target.exists() and not force:
        raise ConfigError(f"{str(target)!r} exists: edit it, or pass --force to overwrite it")
    template = template_records(root)
    guide = FIELD_GUIDE.splitlines()
    if template.skipped:
        guide.append("Files left out because they do not decode:")
        guide.extend(f"  {s}" for s in template.skipped)
    comments = "".join(f"# {line}".rstrip() + "\n" for line in guide)
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in template.records)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(comments + lines, encoding="utf-8")
    videos = len({r["video"] for r in template.records})
    return WrittenTemplate(target, videos, template.skipped)
