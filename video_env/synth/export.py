"""Export synthetic videos to mp4 files plus a JSONL annotation file."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from video_env.data.jsonl import save_jsonl
from video_env.errors import ConfigError
from video_env.synth.questions import FORMS, Form, video_samples
from video_env.synth.world import SynthVideo
from video_env.video.base import FrameArray
from video_env.video.resize import Resize
from video_env.video.writer import write_video

#: Frames rendered per batch while exporting.
_BATCH = 64


def frame_count(video: SynthVideo, fps: float) -> int:
    """Frames the export writes for ``video`` at ``fps``."""
    return max(1, round(video.duration * fps))


def _rendered(
    video: SynthVideo, fps: float, size: Resize, on_frames: Callable[[int], None] | None
) -> Iterator[FrameArray]:
    n = frame_count(video, fps)
    for start in range(0, n, _BATCH):
        times = [min(k / fps, video.duration) for k in range(start, min(n, start + _BATCH))]
        yield from video.frames(times, size=size)
        if on_frames is not None:
            on_frames(len(times))


def export_videos(
    videos: Iterable[SynthVideo],
    out_dir: str | os.PathLike[str],
    *,
    fps: float = 2.0,
    size: tuple[int, int] = (640, 360),
    forms: Iterable[Form] = FORMS,
    source: str = "synth",
    on_frames: Callable[[int], None] | None = None,
) -> Path:
    """Write each video to ``out_dir/<id>.mp4`` and all questions to ``annotations.jsonl``.

    Each JSONL line is :meth:`VideoQA.to_dict` with the video path relative to
    ``out_dir``; load it back with :func:`video_env.data.load_jsonl`.

    Args:
        videos: Videos to export.
        out_dir: Output folder (created).
        fps: Frame rate of the files (``k / fps`` must land on the 30 fps grid for an
            exact match with the renderer; 1, 2, 3, 5, 6, 10, 15 and 30 do).
        size: Box the frames fit in (even sides are kept even).
        forms: Question forms to write.
        source: ``source`` field of the samples.
        on_frames: Called with the number of frames of each rendered batch (progress).

    Returns:
        The path of the annotation file.
    """
    if fps <= 0:
        raise ConfigError(f"fps must be > 0, got {fps}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    forms = tuple(forms)
    exported = []
    for video in videos:
        path = out / f"{video.id}.mp4"
        write_video(path, _rendered(video, fps, _even_size(video, size), on_frames), fps)
        exported += [
            s.replace(video=str(path), meta={**s.meta, "exported_fps": fps})
            for s in video_samples(video, forms, source=source)
        ]
    return save_jsonl(exported, out / "annotations.jsonl", video_root=out)


def _even_size(video: SynthVideo, box: tuple[int, int]) -> Resize:
    """The frame size fitting ``box``, rounded down to even sides (as yuv420p needs)."""
    fitted = Resize.fit(*box).target(video.size)
    return Resize.exact(max(2, fitted.width // 2 * 2), max(2, fitted.height // 2 * 2))
