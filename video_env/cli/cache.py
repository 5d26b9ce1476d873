"""``video-env cache info|clear``: the disk cache of model outputs."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from video_env.cache.database import DATABASE, CacheDamaged, remove_database
from video_env.cache.store import (
    KINDS,
    CacheInfo,
    DiskCache,
    caching_enabled,
    default_directory,
    default_size_limit,
)


def _folder(args: argparse.Namespace) -> Path:
    return Path(args.dir) if args.dir else default_directory()


def _info(args: argparse.Namespace) -> int:
    folder = _folder(args)
    if (folder / DATABASE).exists():
        info = DiskCache(folder).info()
    else:  # report an empty cache without creating its folder or database
        info = CacheInfo(str(folder), 0, 0, default_size_limit(), dict.fromkeys(KINDS, 0))
    if args.json:
        print(json.dumps({**asdict(info), "enabled": caching_enabled()}, indent=2))
        return 0
    if not caching_enabled():
        print("caching: off (VIDEO_ENV_CACHE); runs neither read nor write this cache")
    print(f"cache: {info.directory}")
    print(f"entries: {info.entries}  ({', '.join(f'{k} {n}' for k, n in info.by_kind.items())})")
    print(f"size: {info.bytes / 1e6:.1f} MB of {info.size_limit / 1e9:.1f} GB")
    if info.read_only:
        print("read-only: runs use its entries and store nothing new")
    return 0


def _clear(args: argparse.Namespace) -> int:
    folder = _folder(args)
    if not (folder / DATABASE).exists():  # nothing to clear: no database is made to clear it
        print(f"removed 0 {args.kind or 'cached'} entries")
        return 0
    try:
        cache = DiskCache(folder)
        try:
            removed = cache.clear(args.kind)
        finally:
            cache.close()
    except CacheDamaged:  # nothing in it can be read: it goes whole, whatever the kind
        values = remove_database(folder)
        print(f"removed the damaged cache database in {folder} (and {values} value files)")
        return 0
    print(f"removed {removed} {args.kind or 'cached'} entries")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``cache`` subcommand."""
    parser = subparsers.add_parser(
        "cache",
        help="the disk cache of captions, VLM answers, CLIP features and judge verdicts",
        description="Folder: $VIDEO_ENV_CACHE_DIR or ~/.cache/video-env; size cap: "
        "$VIDEO_ENV_CACHE_SIZE_GB (default 8); VIDEO_ENV_CACHE=off disables caching.",
    )
    actions = parser.add_subparsers(dest="cache_action", metavar="ACTION", required=True)
    info = actions.add_parser("info", help="folder, entries per kind, size")
    info.add_argument("--dir", help="cache folder (default: the configured one)")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=_info)
    clear = actions.add_parser(
        "clear", help="remove cached entries (a damaged database: the whole database)"
    )
    clear.add_argument("--dir", help="cache folder (default: the configured one)")
    clear.add_argument("--kind", choices=KINDS, help="only this kind (default: all)")
    clear.set_defaults(func=_clear)
