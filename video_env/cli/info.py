"""``video-env info``: versions, optional backends, decoder in use."""

from __future__ import annotations

import argparse
import json
import platform
import sys
from importlib import metadata
from typing import Any

from video_env._optional import is_available

#: Optional capabilities: (name, importable module, extra that installs it).
OPTIONAL_BACKENDS = (
    ("decord", "decord", "core (x86_64)"),
    ("pyav", "av", "core"),
    ("torch", "torch", "models"),
    ("torchvision", "torchvision", "models"),
    ("transformers", "transformers", "models"),
    ("open_clip", "open_clip", "models"),
    ("sentence_transformers", "sentence_transformers", "models"),
    ("openai", "openai", "llm"),
    ("diskcache", "diskcache", "models, llm"),
    ("matplotlib", "matplotlib", "bench"),
    ("stable_baselines3", "stable_baselines3", "rl"),
    ("sb3_contrib", "sb3_contrib", "rl"),
    ("ray", "ray", "ray"),
    ("openenv", "openenv", "openenv"),
    ("verifiers", "verifiers", "verifiers"),
)

_DISTRIBUTIONS = {
    "decord": "decord",
    "pyav": "av",
    "torch": "torch",
    "torchvision": "torchvision",
    "transformers": "transformers",
    "open_clip": "open_clip_torch",
    "sentence_transformers": "sentence-transformers",
    "openai": "openai",
    "diskcache": "diskcache",
    "matplotlib": "matplotlib",
    "stable_baselines3": "stable-baselines3",
    "sb3_contrib": "sb3-contrib",
    "ray": "ray",
    "openenv": "openenv",
    "verifiers": "verifiers",
}


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def collect_info() -> dict[str, Any]:
    """Versions, optional backends and the decoder in use, as a dict."""
    from video_env import __version__
    from video_env.video.open import available_decoders, default_decoder

    backends = {}
    for name, module, extra in OPTIONAL_BACKENDS:
        installed = is_available(module)
        backends[name] = {
            "installed": installed,
            "version": _version(_DISTRIBUTIONS[name]) if installed else None,
            "extra": extra,
        }
    from video_env.backends.text import resolve_text_embedder
    from video_env.errors import VideoEnvError

    try:
        embedder = resolve_text_embedder()
    except VideoEnvError as exc:  # a bad $VIDEO_ENV_TEXT_EMBEDDER: say so, do not crash
        embedder = f"error: {exc}"

    decoders = available_decoders()
    return {
        "video_env": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "numpy": _version("numpy"),
        "gymnasium": _version("gymnasium"),
        "decoder": default_decoder() if decoders else None,
        "decoders_available": decoders,
        "text_embedder": embedder,
        "perception_default": "simulated (synthetic world; see docs/simulator.md)",
        "backends": backends,
    }


def _print_text(info: dict[str, Any]) -> None:
    print(f"video-env {info['video_env']}  (python {info['python']}, {info['platform']})")
    print(f"numpy {info['numpy']}, gymnasium {info['gymnasium']}")
    print(
        f"decoder in use: {info['decoder']}  (available: {', '.join(info['decoders_available'])})"
    )
    embedder = info["text_embedder"]
    note = {
        "minilm": "all-MiniLM-L6-v2",
        "lexical": "the default; VIDEO_ENV_TEXT_EMBEDDER=minilm or bench --text-embedder "
        "minilm for MiniLM",
    }.get(embedder, "set VIDEO_ENV_TEXT_EMBEDDER to lexical or minilm")
    print(f"text embedder: {embedder}  ({note})")
    print(f"default perception: {info['perception_default']}")
    print("optional backends:")
    for name, entry in info["backends"].items():
        state = entry["version"] or "installed" if entry["installed"] else "missing"
        print(f"  {name:<22} {state:<14} extra: {entry['extra']}")


def run(args: argparse.Namespace) -> int:
    """Print the information; returns 0."""
    info = collect_info()
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        _print_text(info)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``info`` subcommand."""
    parser = subparsers.add_parser("info", help="versions, optional backends, decoder in use")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)
