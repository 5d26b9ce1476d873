"""``video-env data``: list the dataset loaders, inspect a benchmark's annotations."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import warnings
from collections import Counter
from collections.abc import Sequence
from typing import Any

from video_env.cli.data_export import add_export
from video_env.data import (
    MissingVideosWarning,
    SampleList,
    SkippedRecordsWarning,
    available,
    load,
)
from video_env.data.template import write_template
from video_env.types import VideoQA

#: How many missing video paths (and skipped or repaired records) ``inspect`` prints.
SHOWN_MISSING = 5


def summarize(samples: SampleList | Sequence[VideoQA]) -> dict[str, Any]:
    """Counts, interval coverage, duration statistics and missing videos, as a dict."""
    n = len(samples)
    durations = [s.duration for s in samples if s.duration is not None]
    with_intervals = sum(1 for s in samples if s.gt_intervals)
    missing = getattr(samples, "missing_videos", None)
    skipped_records = getattr(samples, "skipped_records", ())
    repaired_records = getattr(samples, "repaired_records", ())
    stats: dict[str, Any] = {"known": len(durations)}
    if durations:
        stats.update(
            min=min(durations),
            median=statistics.median(durations),
            mean=statistics.fmean(durations),
            max=max(durations),
        )
    return {
        "dataset": getattr(samples, "dataset", None),
        "sources": list(getattr(samples, "sources", ())),
        "samples": n,
        "videos": len({s.video_path for s in samples}),
        "mcq": sum(1 for s in samples if s.is_mcq),
        "open": sum(1 for s in samples if not s.is_mcq),
        "unknown_answer": sum(1 for s in samples if not s.has_answer),
        "categories": dict(Counter(s.category or "(none)" for s in samples).most_common()),
        "with_intervals": with_intervals,
        "intervals_share": with_intervals / n if n else 0.0,
        "clipped_intervals": getattr(samples, "clipped_intervals", 0),
        "duration": stats,
        "missing_videos": None if missing is None else list(missing),
        "skipped": getattr(samples, "skipped", 0),
        "skipped_records": [issue.to_dict() for issue in skipped_records],
        "repaired_records": [issue.to_dict() for issue in repaired_records],
    }


def _print_text(info: dict[str, Any]) -> None:
    n = info["samples"]
    sources = ", ".join(os.path.basename(s) for s in info["sources"])
    print(f"dataset: {info['dataset']}  ({n} samples, {info['videos']} videos; from {sources})")
    print(
        f"questions: {info['mcq']} MCQ, {info['open']} open; "
        f"{info['unknown_answer']} without a public answer"
    )
    print("categories:")
    for name, count in info["categories"].items():
        print(f"  {name:<32} {count:>7}  ({100 * count / n:5.1f} %)")
    print(
        f"with intervals: {info['with_intervals']} / {n} ({100 * info['intervals_share']:.1f} %)"
        f", {info['clipped_intervals']} intervals clipped to the duration"
    )
    d = info["duration"]
    if d["known"]:
        print(
            f"duration (s): known for {d['known']} / {n}; min {d['min']:.1f}, "
            f"median {d['median']:.1f}, mean {d['mean']:.1f}, max {d['max']:.1f}"
        )
    else:
        print("duration: unknown for every sample")
    missing = info["missing_videos"]
    if missing is None:
        print("videos: not checked (no --videos)")
    elif not missing:
        print("videos: all present")
    else:
        shown = ", ".join(missing[:SHOWN_MISSING])
        more = f" (+{len(missing) - SHOWN_MISSING} more)" if len(missing) > SHOWN_MISSING else ""
        print(f"missing videos: {len(missing)} files, e.g. {shown}{more}")
        if info["skipped"]:
            print(f"skipped samples: {info['skipped']}")
    _print_records("skipped malformed records", info["skipped_records"])
    if info["repaired_records"]:
        _print_records("records kept with a harmless defect", info["repaired_records"])


def _print_records(what: str, issues: list[dict[str, Any]]) -> None:
    """One line per record (the first few), saying which and why."""
    print(f"{what}: {len(issues)}")
    for issue in issues[:SHOWN_MISSING]:
        where = os.path.basename(issue["source"])
        if issue["index"] is not None:
            where += f" record {issue['index']}"
        name = f" ({issue['id']})" if issue["id"] else ""
        print(f"  {where}{name}: {issue['message']}")
    if len(issues) > SHOWN_MISSING:
        print(f"  (+{len(issues) - SHOWN_MISSING} more; --json lists all)")


def run_inspect(args: argparse.Namespace) -> int:
    """Load a dataset and print its summary; returns 0."""
    options: dict[str, Any] = {"missing": args.missing, "limit": args.limit, "split": args.split}
    if args.category:
        options["categories"] = args.category
    if args.form:
        options["form"] = args.form
    if args.strict:
        options["strict"] = True
    if args.allow_absolute_paths:
        options["allow_absolute"] = True
    with warnings.catch_warnings():
        # printed below instead
        warnings.simplefilter("ignore", MissingVideosWarning)
        warnings.simplefilter("ignore", SkippedRecordsWarning)
        samples = load(args.name, args.annotations, args.videos, **options)
    info = summarize(samples)
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        _print_text(info)
    return 0


def run_list(args: argparse.Namespace) -> int:
    """Print the registered dataset names; returns 0."""
    for name in available():
        print(name)
    return 0


def run_template(args: argparse.Namespace) -> int:
    """Write the commented JSONL template of a video folder and say how to use it; returns 0.

    Files that do not decode are left out and listed on stderr (and in the template).
    """
    written = write_template(args.folder, args.out, force=args.force)
    path = written.path
    if written.skipped:
        print(
            f"left out {len(written.skipped)} files that do not decode "
            f"(the template covers the other {written.videos}):",
            file=sys.stderr,
        )
        for skipped in written.skipped:
            print(f"  {skipped}", file=sys.stderr)
    print(f"wrote {path}: edit its questions, then run")
    videos = f" --videos {args.folder}" if args.out is not None else ""
    print(f"  video-env bench --dataset jsonl --annotations {path}{videos} --out runs/mine")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``data`` subcommand (``list``, ``inspect``, ``template``, ``export``)."""
    parser = subparsers.add_parser(
        "data", help="datasets: list loaders, inspect, a template for your own videos"
    )
    commands = parser.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    commands.add_parser("list", help="registered dataset names").set_defaults(func=run_list)
    template = commands.add_parser(
        "template", help="write a commented qa.jsonl for a folder of your own videos"
    )
    template.add_argument("folder", help="the folder of your video files")
    template.add_argument("--out", help="the file to write (default: FOLDER/qa.jsonl)")
    template.add_argument("--force", action="store_true", help="overwrite an existing file")
    template.set_defaults(func=run_template)
    inspect = commands.add_parser("inspect", help="counts, intervals, durations, missing videos")
    inspect.add_argument("name", help=f"dataset name ({', '.join(available())})")
    inspect.add_argument("--annotations", required=True, help="annotation file or folder")
    inspect.add_argument("--videos", default=None, help="video folder (checks which exist)")
    inspect.add_argument("--split", default=None, help="keep one split")
    inspect.add_argument(
        "--category", action="append", default=None, help="keep a category (repeatable)"
    )
    inspect.add_argument("--limit", type=int, default=None, help="keep at most N samples")
    inspect.add_argument(
        "--missing", choices=("keep", "skip", "error"), default="keep", help="missing videos"
    )
    inspect.add_argument(
        "--form", choices=("mcq", "open", "both"), default=None, help="FALCON-/CG-Bench forms"
    )
    inspect.add_argument(
        "--strict",
        action="store_true",
        help="refuse the file at its first malformed record (default: skip and report it)",
    )
    inspect.add_argument(
        "--allow-absolute-paths",
        action="store_true",
        help="use absolute video paths found in the annotations (default: refuse them)",
    )
    inspect.add_argument("--json", action="store_true", help="print JSON")
    inspect.set_defaults(func=run_inspect)
    add_export(commands)
