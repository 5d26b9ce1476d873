"""``video-env info``: versions, optional backends, each decoder usable or not and why."""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import re
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


#: What installs each decoder, for a report of one that is missing.
_DECODER_INSTALL = {
    "torchcodec": "the torchcodec extra, and FFmpeg's shared libraries (apt install ffmpeg)",
    "decord": "pip install decord==0.6.0 (x86_64 wheels only)",
    "pyav": "pip install av",
}


def decoder_status(name: str) -> dict[str, Any]:
    """Whether the decoder ``name`` (``torchcodec``, ``decord``, ``pyav``) can read videos.

    Returns:
        ``{"usable": bool, "reason": str}``: the version (and TorchCodec's FFmpeg) when
        usable; else why not, e.g. installed but FFmpeg's libraries missing, with the
        import's own error.
    """
    module = {"pyav": "av"}.get(name, name)
    if not is_available(module):
        return {"usable": False, "reason": f"not installed ({_DECODER_INSTALL[name]})"}
    try:
        imported = importlib.import_module(module)
        if name == "torchcodec":
            importlib.import_module("torchcodec.decoders")
            core = importlib.import_module("torchcodec._core.ops")
    except Exception as exc:  # ImportError, OSError (a library), RuntimeError: all say why
        return {"usable": False, "reason": f"installed, but its import fails: {_first(exc)}"}
    version = getattr(imported, "__version__", None) or _version(_DISTRIBUTIONS[name])
    if name != "torchcodec":
        return {"usable": True, "reason": f"{name} {version}"}
    # TorchCodec imports without FFmpeg (its image decoders need none) and records whether
    # its FFmpeg libraries loaded; loading them again says which are missing
    if getattr(core, "_FFMPEG_AVAILABLE", True):
        ffmpeg = getattr(core, "ffmpeg_major_version", None)
        return {"usable": True, "reason": f"torchcodec {version}, FFmpeg {ffmpeg}"}
    try:
        core.load_core_libraries()
        why = "its FFmpeg libraries did not load at import"
    except Exception as exc:  # a page of tracebacks, one per FFmpeg version tried
        errors = re.findall(r"^\s*(\w+(?:Error|Exception): .+)$", str(exc), re.MULTILINE)
        why = "; ".join([_first(exc), *dict.fromkeys(e.strip() for e in errors[-3:])])
    return {
        "usable": False,
        "reason": f"installed, but FFmpeg's shared libraries do not load (apt install "
        f"ffmpeg, or libavcodec, libavformat, libavutil): {why}",
    }


def _first(exc: BaseException) -> str:
    """An exception's type and its message's first line (library errors run long)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def collect_info() -> dict[str, Any]:
    """Versions, optional backends and the decoder in use, as a dict."""
    from video_env import __version__
    from video_env.video.open import DECODERS, available_decoders, default_decoder

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
        "decoders": {name: decoder_status(name) for name in DECODERS},
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
    print("decoders:")
    for name, status in info["decoders"].items():
        usable = "usable" if status["usable"] else "not usable"
        print(f"  {name:<12} {usable:<11} {status['reason']}")
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
