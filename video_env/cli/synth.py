"""``video-env synth``: list, show and export the SIMULATED synthetic suites."""

from __future__ import annotations

import argparse
import json
from typing import Any

from video_env._optional import require
from video_env.synth import FORMS, export_videos, get_suite, list_suites, load_suite, suite_videos


def _list(args: argparse.Namespace) -> int:
    specs = list_suites()
    width = max(len(spec.name) for spec in specs)
    for spec in specs:
        samples = load_suite(spec.name)
        print(f"{spec.name:<{width}} {len(samples):>4} questions  {spec.description}")
    print("(synthetic videos; simulated perception: see docs/simulator.md)")
    return 0


def _show(args: argparse.Namespace) -> int:
    spec = get_suite(args.suite)
    videos = suite_videos(spec.name)
    if args.json:
        print(json.dumps([_video_dict(v) for v in videos], indent=2))
        return 0
    print(f"{spec.name}: {spec.description} (seed {spec.seed}; SIMULATED)")
    for video in videos[: args.videos]:
        print(f"\n{video.id}  {video.duration / 60:.1f} min, {len(video.scenes)} scenes")
        for needle in video.needles:
            window = ", ".join(f"{iv.start:.1f}-{iv.end:.1f}s" for iv in needle.intervals)
            print(
                f"  [{needle.category:<6}] {window:<18} {needle.pixel_size:>5.1f}px  "
                f"{needle.question}  -> {needle.fact}"
            )
    if len(videos) > args.videos:
        print(f"\n... {len(videos) - args.videos} more videos (--videos N)")
    return 0


def _video_dict(video: Any) -> dict[str, Any]:
    return {
        "id": video.id,
        "duration": video.duration,
        "scenes": [
            {"start": s.interval.start, "end": s.interval.end, "description": s.description}
            for s in video.scenes
        ],
        "needles": [
            {
                "id": n.id,
                "category": n.category,
                "question": n.question,
                "fact": n.fact,
                "distractors": list(n.distractors),
                "intervals": [iv.to_list() for iv in n.intervals],
                "pixel_size": n.pixel_size,
            }
            for n in video.needles
        ],
    }


def _export(args: argparse.Namespace) -> int:
    from video_env.synth.export import frame_count

    videos = suite_videos(args.suite)[: args.limit]
    bar = None
    if not args.quiet:
        tqdm = require("tqdm", "core", "progress bars").tqdm
        total = sum(frame_count(v, args.fps) for v in videos)
        bar = tqdm(total=total, unit="frame", desc=f"export {len(videos)} videos")
    try:
        path = export_videos(
            videos,
            args.out,
            fps=args.fps,
            size=(args.width, args.height),
            forms=args.forms,
            source=args.suite,
            on_frames=bar.update if bar is not None else None,
        )
    finally:
        if bar is not None:
            bar.close()
    print(f"wrote {len(videos)} videos and {path}")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``synth`` subcommand."""
    parser = subparsers.add_parser("synth", help="synthetic needle suites (list, show, export)")
    commands = parser.add_subparsers(dest="synth_command", metavar="ACTION", required=True)
    commands.add_parser("list", help="list the suites").set_defaults(func=_list)
    show = commands.add_parser("show", help="show a suite's videos, needles and answers")
    show.add_argument("suite")
    show.add_argument("--videos", type=int, default=3, help="videos to print")
    show.add_argument("--json", action="store_true", help="print every video as JSON")
    show.set_defaults(func=_show)
    export = commands.add_parser("export", help="write a suite's videos as mp4 + JSONL")
    export.add_argument("suite")
    export.add_argument("--out", required=True, help="output folder")
    export.add_argument("--fps", type=float, default=2.0)
    export.add_argument("--quiet", action="store_true", help="no progress bar")
    export.add_argument("--width", type=int, default=640)
    export.add_argument("--height", type=int, default=360)
    export.add_argument("--limit", type=int, default=None, help="export the first N videos")
    export.add_argument("--forms", nargs="+", choices=FORMS, default=list(FORMS))
    export.set_defaults(func=_export)
